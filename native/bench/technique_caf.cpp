// CAF actors (C++ Actor Framework 0.17): one sender and one receiver actor per pair and a
// coordinator that plays the barrier: it sends "go" to every sender once every receiver
// has recorded the previous sample.
#include "harness.hpp"

#ifdef JITTERLAB_HAVE_CAF

#include <caf/all.hpp>

#include <chrono>
#include <thread>

#include "jitterlab/clock.hpp"

namespace jitterlab {
namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

// Applies the run's policy and CPUs to every thread CAF starts (workers, timers, detached).
class PlacementHook final : public caf::thread_hook {
public:
    explicit PlacementHook(RunState* state) : state_(state) {}
    void init(caf::actor_system&) override {}
    void thread_started() override {
        const int index = next_.fetch_add(1);
        const auto cpus = allowed_cpus();
        std::vector<int> plan;
        if (state_->config.pin != "none" && !cpus.empty()) {
            const auto all = plan_cpus(state_->config.pin, index + 1, cpus);
            plan = all.back();
        }
        place_thread(*state_, "caf-thread", -1, plan);
    }
    void thread_terminates() override {}

private:
    RunState* state_;
    std::atomic<int> next_{0};
};

struct ReceiverState {
    SplitMix64 rng{0};
    std::int64_t k = 0;
};

caf::behavior receiver(caf::stateful_actor<ReceiverState>* self, RunState* run, int pair, caf::actor coordinator) {
    self->state.rng = SplitMix64(thread_seed(run->config.seed, pair, 1));
    PairRecorder* recorder = run->recorders[static_cast<std::size_t>(pair)].get();
    return {
        [=](std::int64_t t_send, std::int32_t x) {
            auto& st = self->state;
            run->block.write(st.rng.next(), x);
            const std::int64_t t_recv = now_ns();
            const auto& cfg = run->config;
            if (cfg.record && st.k >= cfg.warmup) recorder->record(st.k - cfg.warmup, t_send, t_recv);
            ++st.k;
            self->send(coordinator, done_atom::value);
        },
    };
}

struct SenderState {
    SplitMix64 rng{0};
};

caf::behavior sender(caf::stateful_actor<SenderState>* self, RunState* run, int pair, caf::actor peer) {
    self->state.rng = SplitMix64(thread_seed(run->config.seed, pair, 0));
    return {
        [=](go_atom) {
            const std::int64_t t_send = now_ns();
            const std::int32_t x = run->block.read(self->state.rng.next());
            self->send(peer, t_send, x);
        },
    };
}

// The actors of the run, filled in by run_caf before the first "go" reaches the coordinator.
struct Cast {
    std::vector<caf::actor> senders;
    std::vector<caf::actor> receivers;
};

struct CoordinatorState {
    int outstanding = 0;
    std::int64_t rounds_left = 0;
};

caf::behavior coordinator(caf::stateful_actor<CoordinatorState>* self, RunState* run, const Cast* cast) {
    self->state.rounds_left = run->config.warmup + run->config.samples;
    auto start_round = [=] {
        auto& st = self->state;
        const auto& actors = *cast;
        if (st.rounds_left == 0 || run->stop_requested.load()) {
            for (const auto& a : actors.senders) self->send_exit(a, caf::exit_reason::user_shutdown);
            for (const auto& a : actors.receivers) self->send_exit(a, caf::exit_reason::user_shutdown);
            self->quit();
            return;
        }
        --st.rounds_left;
        st.outstanding = static_cast<int>(actors.receivers.size());
        for (const auto& s : actors.senders) self->send(s, go_atom::value);
    };
    return {
        [=](go_atom) { start_round(); },
        [=](done_atom) {
            if (--self->state.outstanding == 0) {
                const auto pause = run->config.pause_ns;
                if (pause > 0) self->delayed_send(self, std::chrono::nanoseconds(pause), go_atom::value);
                else start_round();
            }
        },
    };
}

}  // namespace

bool caf_available() noexcept { return true; }

void run_caf(RunState& state) {
    const auto& cfg = state.config;
    caf::actor_system_config caf_cfg;
    const bool detached = cfg.caf_scheduler == "detached";
    caf_cfg.set("scheduler.policy", cfg.caf_scheduler == "sharing" ? caf::atom("sharing") : caf::atom("stealing"));
    if (cfg.caf_threads > 0) caf_cfg.set("scheduler.max-threads", static_cast<std::size_t>(cfg.caf_threads));
    caf_cfg.add_thread_hook<PlacementHook>(&state);
    caf::actor_system system{caf_cfg};

    Cast cast;
    auto coord = system.spawn(coordinator, &state, &cast);
    for (int p = 0; p < cfg.pairs; ++p) {
        auto r = detached ? system.spawn<caf::detached>(receiver, &state, p, coord) : system.spawn(receiver, &state, p, coord);
        auto s = detached ? system.spawn<caf::detached>(sender, &state, p, r) : system.spawn(sender, &state, p, r);
        cast.receivers.push_back(r);
        cast.senders.push_back(s);
    }
    caf::anon_send(coord, go_atom::value);  // the message orders the writes to `cast` before its reads
    system.await_all_actors_done();
}

}  // namespace jitterlab

#else

namespace jitterlab {
bool caf_available() noexcept { return false; }
void run_caf(RunState& state) { state.fail("CAF support was not built: install libcaf-dev and reinstall jitterlab"); }
}  // namespace jitterlab

#endif
