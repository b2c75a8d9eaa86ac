// A minimal JSON writer for the harness metadata (no dependency, no allocation in hot paths).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace jitterlab {

/// Builds a JSON document in order; the caller keeps objects and arrays balanced.
class JsonWriter {
public:
    JsonWriter& begin_object() { return open('{'); }
    JsonWriter& end_object() { return close('}'); }
    JsonWriter& begin_array() { return open('['); }
    JsonWriter& end_array() { return close(']'); }

    JsonWriter& key(std::string_view name) {
        separator();
        string_literal(name);
        out_ << ':';
        after_key_ = true;
        return *this;
    }
    JsonWriter& value(std::string_view text) { separator(); string_literal(text); return *this; }
    JsonWriter& value(const char* text) { return value(std::string_view(text)); }
    JsonWriter& value(bool b) { separator(); out_ << (b ? "true" : "false"); return *this; }
    JsonWriter& value(std::int64_t v) { separator(); out_ << v; return *this; }
    JsonWriter& value(std::uint64_t v) { separator(); out_ << v; return *this; }
    JsonWriter& value(int v) { return value(static_cast<std::int64_t>(v)); }
    JsonWriter& value(double v) {
        separator();
        if (std::isfinite(v)) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.17g", v);
            out_ << buf;
        } else {
            out_ << "null";
        }
        return *this;
    }
    JsonWriter& null() { separator(); out_ << "null"; return *this; }
    template <typename T>
    JsonWriter& values(const std::vector<T>& list) {
        begin_array();
        for (const T& v : list) value(v);
        return end_array();
    }
    template <typename T>
    JsonWriter& field(std::string_view name, T v) { key(name); return value(v); }

    std::string str() const { return out_.str(); }

private:
    JsonWriter& open(char c) { separator(); out_ << c; first_ = true; return *this; }
    JsonWriter& close(char c) { out_ << c; first_ = false; return *this; }
    void separator() {
        if (after_key_) { after_key_ = false; return; }
        if (!first_) out_ << ',';
        first_ = false;
    }
    void string_literal(std::string_view s) {
        out_ << '"';
        for (char ch : s) {
            switch (ch) {
                case '"': out_ << "\\\""; break;
                case '\\': out_ << "\\\\"; break;
                case '\n': out_ << "\\n"; break;
                case '\t': out_ << "\\t"; break;
                default:
                    if (static_cast<unsigned char>(ch) < 0x20) {
                        char buf[8];
                        std::snprintf(buf, sizeof buf, "\\u%04x", ch);
                        out_ << buf;
                    } else {
                        out_ << ch;
                    }
            }
        }
        out_ << '"';
    }
    std::ostringstream out_;
    bool first_ = true;
    bool after_key_ = false;
};

}  // namespace jitterlab
