// The layer's configuration file (docs/xr.md): a small subset of TOML that the layer reads
// itself, so the same file serves `jitterlab xr run --config` and an application started
// with JITTERLAB_XR_CONFIG by hand. Accepted: comments (#), [table] headers, and
// `key = "string"` / `key = integer` lines. Anything else is an error naming the line.
#pragma once

#include <cctype>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace jitterlab::xr {

struct Config {
  std::uint64_t seed = 0;
  std::string head_model;    // empty: the head is not delayed
  std::string head_channel = "xr.head";
  std::string frame_prefix;  // empty: no frame timing

  static bool channel_ok(const std::string& c) {
    if (c.empty() || c.size() > 64) return false;
    for (char ch : c)
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-')) return false;
    return true;
  }

  static Config parse(const std::string& text, const std::string& where, const std::string& dir) {
    Config c;
    std::istringstream in(text);
    std::string line, table;
    int number = 0;
    bool seen_head = false;
    auto fail = [&](const std::string& why) -> void {
      throw std::runtime_error(where + ":" + std::to_string(number) + ": " + why);
    };
    while (std::getline(in, line)) {
      ++number;
      std::size_t i = line.find_first_not_of(" \t\r");
      if (i == std::string::npos || line[i] == '#') continue;
      if (line[i] == '[') {
        const std::size_t j = line.find(']', i);
        if (j == std::string::npos) fail("a table header without ']'");
        table = line.substr(i + 1, j - i - 1);
        if (table != "head" && table != "frames")
          fail("unknown table [" + table + "] (poses: [head]; frame timing: [frames])");
        if (table == "head") seen_head = true;
        continue;
      }
      const std::size_t eq = line.find('=', i);
      if (eq == std::string::npos) fail("expected key = value");
      std::string key = line.substr(i, eq - i);
      key.erase(key.find_last_not_of(" \t") + 1);
      std::size_t v = line.find_first_not_of(" \t", eq + 1);
      if (v == std::string::npos) fail("no value for '" + key + "'");
      std::string value;
      bool is_string = false;
      if (line[v] == '"') {
        is_string = true;
        std::size_t k = v + 1;
        for (; k < line.size() && line[k] != '"'; ++k) {
          if (line[k] == '\\' && k + 1 < line.size()) {
            ++k;
            if (line[k] != '"' && line[k] != '\\') fail("only \\\" and \\\\ escapes are read");
          }
          value += line[k];
        }
        if (k >= line.size()) fail("an unterminated string");
        v = k + 1;
      } else {
        std::size_t k = v;
        while (k < line.size() && (std::isdigit(static_cast<unsigned char>(line[k])) || line[k] == '_')) {
          if (line[k] != '_') value += line[k];
          ++k;
        }
        if (value.empty() || value.size() > 19) fail("'" + key + "' needs a string in quotes or an integer");
        v = k;
      }
      const std::size_t rest = line.find_first_not_of(" \t\r", v);
      if (rest != std::string::npos && line[rest] != '#') fail("unexpected text after the value of '" + key + "'");
      const std::string qualified = table.empty() ? key : table + "." + key;
      if (qualified == "seed" && !is_string) c.seed = std::stoull(value);
      else if (qualified == "head.model" && is_string)
        c.head_model = (!value.empty() && value[0] != '/' && !dir.empty()) ? dir + "/" + value : value;
      else if (qualified == "head.channel" && is_string) c.head_channel = value;
      else if (qualified == "frames.channel_prefix" && is_string) c.frame_prefix = value;
      else fail("unknown key '" + qualified + "' (or a value of the wrong type)");
    }
    if (seen_head && c.head_model.empty()) throw std::runtime_error(where + ": [head] needs model = \"FILE\"");
    if (!c.head_model.empty() && !channel_ok(c.head_channel))
      throw std::runtime_error(where + ": head.channel '" + c.head_channel + "' is not a channel name");
    if (!c.frame_prefix.empty() && !channel_ok(c.frame_prefix + ".frame-interval"))
      throw std::runtime_error(where + ": frames.channel_prefix '" + c.frame_prefix + "' is not a channel name");
    return c;
  }

  static Config load(const std::string& path) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error(path + ": cannot read the config");
    std::stringstream ss;
    ss << f.rdbuf();
    const std::size_t slash = path.rfind('/');
    return parse(ss.str(), path, slash == std::string::npos ? std::string(".") : path.substr(0, slash));
  }
};

}  // namespace jitterlab::xr
