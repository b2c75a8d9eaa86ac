// The one option reader of every native tool (src/tool_util.hpp): tables of options applied
// from argv, the shared options, old spellings, the one usage printer, and bad input as one
// line "TOOL: error: ..." with exit code 2.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../src/tool_util.hpp"

namespace t = jitterlab::tool;

namespace {

/// argv for read_options: a program name, then the words.
struct Argv {
    explicit Argv(std::vector<std::string> words) : words_(std::move(words)) {
        words_.insert(words_.begin(), "jitterlab-test");
        for (auto& w : words_) ptrs_.push_back(w.data());
    }
    int argc() const { return static_cast<int>(ptrs_.size()); }
    char** argv() { return ptrs_.data(); }

private:
    std::vector<std::string> words_;
    std::vector<char*> ptrs_;
};

struct Parsed {
    std::int64_t samples = 10;
    int cpu = -1;
    double rate = 90;
    std::string name = "none";
    bool fast = false;
    jitterlab::PolicyRequest policy;
    bool mlock = true;
    std::string out = ".";
};

void parse(Parsed& p, std::vector<std::string> words) {
    Argv a(std::move(words));
    t::Option samples = t::int_option("--samples", "N", "recorded samples", p.samples, 1, 1000);
    samples.old = "--count";
    t::read_options("jitterlab-test", a.argc(), a.argv(), "--out DIR [options]", "A test tool.",
                    {
                        samples,
                        t::int_option("--cpu", "CPU", "pin (-1: not pinned)", p.cpu, -1, 4095),
                        t::real_option("--rate", "HZ", "rate", p.rate, 0, 1000),
                        t::text_option("--name", "NAME", "a name", p.name),
                        t::switch_option("--fast", "go fast", p.fast),
                    },
                    t::common_options("jitterlab-test", p.policy, p.mlock, p.out));
}

}  // namespace

TEST(ToolArgs, EveryKindOfOptionIsApplied) {
    Parsed p;
    parse(p, {"--samples", "500", "--cpu", "-1", "--rate", "2.5", "--name", "x y", "--fast", "--out", "/tmp",
              "--policy", "fifo", "--priority", "42", "--no-mlock"});
    EXPECT_EQ(p.samples, 500);
    EXPECT_EQ(p.cpu, -1);
    EXPECT_DOUBLE_EQ(p.rate, 2.5);
    EXPECT_EQ(p.name, "x y");
    EXPECT_TRUE(p.fast);
    EXPECT_EQ(p.out, "/tmp");
    EXPECT_EQ(p.policy.policy, jitterlab::Policy::fifo);
    EXPECT_EQ(p.policy.priority, 42);
    EXPECT_FALSE(p.mlock);
}

TEST(ToolArgs, NothingGivenKeepsTheDefaults) {
    Parsed p;
    parse(p, {});
    EXPECT_EQ(p.samples, 10);
    EXPECT_EQ(p.name, "none");
    EXPECT_FALSE(p.fast);
    EXPECT_TRUE(p.mlock);
}

TEST(ToolArgs, AnOldSpellingWorksWithAWarning) {
    Parsed p;
    testing::internal::CaptureStderr();
    parse(p, {"--count", "7"});
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(p.samples, 7);
    EXPECT_EQ(err, "warning[deprecated-option]: --count is an old spelling: use --samples\n");
}

TEST(ToolArgsDeathTest, BadInputIsOneLineAndExitCode2) {
    testing::FLAGS_gtest_death_test_style = "threadsafe";
    const auto bad = [](std::vector<std::string> words) {
        Parsed p;
        parse(p, std::move(words));
    };
    EXPECT_EXIT(bad({"--bogus"}), testing::ExitedWithCode(2),
                "^jitterlab-test: error: unknown option '--bogus' \\(see --help\\)\n$");
    EXPECT_EXIT(bad({"--samples", "0"}), testing::ExitedWithCode(2),
                "^jitterlab-test: error: --samples expects an integer in \\[1, 1000\\], got '0'\n$");
    EXPECT_EXIT(bad({"--samples", "12x"}), testing::ExitedWithCode(2), "--samples expects an integer");
    EXPECT_EXIT(bad({"--name"}), testing::ExitedWithCode(2), "^jitterlab-test: error: --name needs a value\n$");
    EXPECT_EXIT(bad({"--rate", "0"}), testing::ExitedWithCode(2), "--rate expects a number in \\(0, 1000\\]");
    EXPECT_EXIT(bad({"--policy", "deadline"}), testing::ExitedWithCode(2), "--policy expects other, fifo or rr");
    EXPECT_EXIT(bad({"stray"}), testing::ExitedWithCode(2), "unknown option 'stray'");
}

TEST(ToolArgsDeathTest, HelpPrintsTheUsageAndExits0) {
    testing::FLAGS_gtest_death_test_style = "threadsafe";
    EXPECT_EXIT(
        {
            Parsed p;
            parse(p, {"--samples", "3", "--help"});
        },
        testing::ExitedWithCode(0), "");
}

TEST(ToolArgs, OneUsagePrinterAlignsEveryOption) {
    bool b = false;
    std::string s;
    const std::string text = t::usage_text(
        "jitterlab-x", "--out DIR [options]", "What it does.",
        {t::switch_option("--b", "a switch", b),
         t::text_option("--a-very-long-option-name", "VALUE", "first line\nsecond line", s)});
    EXPECT_EQ(text,
              "usage: jitterlab-x --out DIR [options]\n"
              "What it does.\n"
              "  --b                       a switch\n"
              "  --a-very-long-option-name VALUE  first line\n"
              "                            second line\n");
}
