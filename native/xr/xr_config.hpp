// The layer's configuration file (docs/xr.md): a small subset of TOML that the layer reads
// itself, so the same file serves `jitterlab xr run --config` and an application started
// with JITTERLAB_XR_CONFIG by hand. Accepted: comments (#), [table] headers, and
// `key = "string"` / `key = integer` lines. Anything else is an error naming the line.
// Poses: [head] (the VIEW space and xrLocateViews), [pose.NAME] (the action spaces created for
// one subaction path, `path = "/user/hand/left"`), [every] (every other space located).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace jitterlab::xr {

/// One delayed pose of the config: its model, channel and seed.
struct PoseConfig {
  std::string name;  // "head", "every", or NAME of [pose.NAME]
  std::string path;  // [pose.NAME]: the subaction path
  std::string model;
  std::string channel;
  std::uint64_t seed = 0;
  bool has_seed = false;
};

struct Config {
  std::uint64_t seed = 0;
  std::string head_model;    // empty: the head is not delayed
  std::string head_channel = "xr.head";
  std::string frame_prefix;  // empty: no frame timing
  std::vector<PoseConfig> poses;  // in file order: [head], [every], [pose.NAME]; seed: the file's + position

  const PoseConfig* find(const std::string& name) const {
    for (const auto& p : poses)
      if (p.name == name) return &p;
    return nullptr;
  }

  static bool path_ok(const std::string& p) {  // an OpenXR path: /segment/segment, [a-z0-9-_.]
    if (p.size() < 2 || p.size() >= 256 || p[0] != '/' || p.back() == '/') return false;
    for (std::size_t i = 0; i < p.size(); ++i) {
      const char ch = p[i];
      if (ch == '/' ? (i > 0 && p[i - 1] == '/')
                    : !(std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)) ||
                        ch == '-' || ch == '_' || ch == '.'))
        return false;
    }
    return true;
  }

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
    PoseConfig* pose = nullptr;  // the pose table being read
    bool seen_frames = false;
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
        pose = nullptr;
        std::string name = table;
        if (table.rfind("pose.", 0) == 0) {
          name = table.substr(5);
          if (name.empty() || name == "head" || name == "every" || !channel_ok(name) || name.find('.') != std::string::npos)
            fail("[pose.NAME] needs a NAME of letters, digits, '_' and '-'");
        } else if (table != "head" && table != "frames" && table != "every") {
          fail("unknown table [" + table + "] (poses: [head], [pose.NAME], [every]; frame timing: [frames])");
        }
        if (table != "frames") {
          for (const auto& p : c.poses)
            if (p.name == name) fail("[" + table + "] appears twice");
          c.poses.push_back(PoseConfig{name, "", "", "xr." + name, 0, false});
          pose = &c.poses.back();
        } else {
          if (seen_frames) fail("[frames] appears twice");
          seen_frames = true;
        }
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
      const bool is_pose_table = pose != nullptr && table.rfind("pose.", 0) == 0;
      if (qualified == "seed" && !is_string) c.seed = std::stoull(value);
      else if (pose != nullptr && key == "model" && is_string)
        pose->model = (!value.empty() && value[0] != '/' && !dir.empty()) ? dir + "/" + value : value;
      else if (pose != nullptr && key == "channel" && is_string) pose->channel = value;
      else if (pose != nullptr && key == "seed" && !is_string) {
        pose->seed = std::stoull(value);
        pose->has_seed = true;
      } else if (is_pose_table && key == "path" && is_string) pose->path = value;
      else if (qualified == "frames.channel_prefix" && is_string) c.frame_prefix = value;
      else fail("unknown key '" + qualified + "' (or a value of the wrong type)");
    }
    std::vector<std::string> channels;
    for (std::size_t k = 0; k < c.poses.size(); ++k) {
      PoseConfig& p = c.poses[k];
      const std::string table = p.name == "head" || p.name == "every" ? p.name : "pose." + p.name;
      if (p.model.empty()) throw std::runtime_error(where + ": [" + table + "] needs model = \"FILE\"");
      if (table != p.name && !path_ok(p.path))
        throw std::runtime_error(where + ": [" + table + "] needs path = \"/user/...\" (a subaction path, e.g. /user/hand/left)");
      for (std::size_t m = 0; m < k; ++m)
        if (!c.poses[m].path.empty() && c.poses[m].path == p.path)
          throw std::runtime_error(where + ": path '" + p.path + "' is named by two tables");
      if (!channel_ok(p.channel))
        throw std::runtime_error(where + ": " + table + ".channel '" + p.channel + "' is not a channel name");
      channels.push_back(p.channel);
      if (!p.has_seed) p.seed = c.seed + k;
    }
    if (const PoseConfig* head = c.find("head")) {
      c.head_model = head->model;
      c.head_channel = head->channel;
    }
    if (!c.frame_prefix.empty()) {
      if (!channel_ok(c.frame_prefix + ".frame-interval"))
        throw std::runtime_error(where + ": frames.channel_prefix '" + c.frame_prefix + "' is not a channel name");
      for (const char* suffix : {".frame-interval", ".frame-time", ".pose-age"}) channels.push_back(c.frame_prefix + suffix);
    }
    std::sort(channels.begin(), channels.end());
    if (const auto dup = std::adjacent_find(channels.begin(), channels.end()); dup != channels.end())
      throw std::runtime_error(where + ": channel '" + *dup + "' is named twice");
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
