package dev.jitterlab.jvm;

import java.util.List;

/** A minimal in-order JSON writer for harness.json (the caller keeps it balanced). */
final class Json {
    private final StringBuilder out = new StringBuilder();
    private boolean first = true;

    Json begin() {
        comma();
        out.append('{');
        first = true;
        return this;
    }

    Json end() {
        out.append('}');
        first = false;
        return this;
    }

    Json array() {
        out.append('[');
        first = true;
        return this;
    }

    Json endArray() {
        out.append(']');
        first = false;
        return this;
    }

    Json key(String name) {
        comma();
        literal(name);
        out.append(':');
        first = true;  // the value follows without a comma
        return this;
    }

    Json field(String name, String value) {
        key(name);
        first = false;
        literal(value);
        return this;
    }

    Json field(String name, boolean value) {
        key(name);
        out.append(value);
        first = false;
        return this;
    }

    Json field(String name, double value) {
        key(name);
        out.append(Double.isFinite(value) ? Double.toString(value) : "null");
        first = false;
        return this;
    }

    Json field(String name, long value) {
        key(name);
        first = false;
        out.append(value);
        return this;
    }

    Json strings(String name, List<String> values) {
        key(name);
        out.append('[');
        for (int i = 0; i < values.size(); i++) {
            if (i > 0) out.append(',');
            literal(values.get(i));
        }
        out.append(']');
        first = false;
        return this;
    }

    private void comma() {
        if (!first) out.append(',');
        first = false;
    }

    private void literal(String s) {
        out.append('"');
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                default -> {
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
                }
            }
        }
        out.append('"');
    }

    @Override
    public String toString() {
        return out.toString();
    }
}
