// The main of a native run (sparseforge.sim.native): loads the stream images,
// resets the design, toggles its clock until it raises ``done``, then writes
// what its sinks took. Usage: sim DIR LIMIT PATIENCE [WAVES.fst]
//   DIR/source<i>.bin  u32 items_lo, items_hi, rate, seed, words; then items x words u32
//   DIR/sink<i>.cfg    u32 items_lo, items_hi, rate, seed, words
//   DIR/sink<i>.bin    written: the items taken, words u32 each
// Prints one JSON object; exits 0 when done, 3 at the cycle limit, 4 when no
// stream moved for PATIENCE cycles (a deadlock), 2 on a bad image.
#include "Vtop.h"
#include "Vtop___024root.h"
#include "svdpi.h"
#include "verilated.h"
#ifdef SF_WAVES
#include "verilated_fst_c.h"
#endif
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

struct Image {
    uint64_t items = 0;
    uint32_t rate = 0, seed = 0, words = 0;
    std::vector<uint32_t> data;
};

std::string dir;
std::vector<Image> sources(64), sinks(64);

[[noreturn]] void fail(const std::string &what) {
    fprintf(stderr, "%s\n", what.c_str());
    exit(2);
}

Image load(const std::string &name, bool with_items) {
    std::string path = dir + "/" + name;
    FILE *f = fopen(path.c_str(), "rb");
    if (!f) fail(path + ": cannot open the stream image");
    uint32_t head[5];
    if (fread(head, 4, 5, f) != 5) fail(path + ": truncated header");
    Image image;
    image.items = head[0] | (uint64_t)head[1] << 32;
    image.rate = head[2];
    image.seed = head[3];
    image.words = head[4];
    if (image.words == 0 || image.words > 128) fail(path + ": bad item width");
    if (with_items) {
        image.data.resize(image.items * image.words);
        if (fread(image.data.data(), 4, image.data.size(), f) != image.data.size())
            fail(path + ": truncated: fewer items than its header says");
        if (fgetc(f) != EOF) fail(path + ": more data than its header says");
    } else {
        image.data.reserve(image.items * image.words);
    }
    fclose(f);
    return image;
}

}  // namespace

extern "C" void sf_source_open(int id, long long *items, int *rate, int *seed) {
    if (id < 0 || id >= (int)sources.size()) fail("source id out of range");
    Image &s = sources[id] = load("source" + std::to_string(id) + ".bin", true);
    *items = (long long)s.items;
    *rate = (int)s.rate;
    *seed = (int)s.seed;
}

extern "C" long long sf_source_chunk(int id, long long index, int chunk) {
    Image &s = sources[id];
    if ((uint64_t)index >= s.items) return 0;
    const uint32_t *item = &s.data[index * s.words + 2 * chunk];
    uint64_t value = item[0];
    if (2 * chunk + 1 < (int)s.words) value |= (uint64_t)item[1] << 32;
    return (long long)value;
}

extern "C" void sf_sink_open(int id, long long *items, int *rate, int *seed) {
    if (id < 0 || id >= (int)sinks.size()) fail("sink id out of range");
    Image &s = sinks[id] = load("sink" + std::to_string(id) + ".cfg", false);
    *items = (long long)s.items;
    *rate = (int)s.rate;
    *seed = (int)s.seed;
}

extern "C" void sf_sink_chunk(int id, int chunk, long long value) {
    Image &s = sinks[id];
    s.data.push_back((uint32_t)value);
    if (2 * chunk + 1 < (int)s.words) s.data.push_back((uint32_t)((uint64_t)value >> 32));
}

// The model's evaluation without Verilator's per-call housekeeping (freeing
// dynamic objects, flushing messages from other threads), which these designs
// never need; eval_step does it once for the initial evaluation.
void Vtop___024root___eval(Vtop___024root *vlSelf);

// A progress line on stderr every 2^22 cycles (a few a second).
const uint64_t PROGRESS_MASK = (1ull << 22) - 1;

int main(int argc, char **argv) {
    if (argc < 4) fail("usage: sim DIR LIMIT PATIENCE [WAVES.fst]");
    dir = argv[1];
    uint64_t limit = strtoull(argv[2], nullptr, 10);
    uint64_t patience = strtoull(argv[3], nullptr, 10);
    auto t0 = std::chrono::steady_clock::now();
    VerilatedContext context;
    Vtop top(&context);
#ifdef SF_WAVES
    VerilatedFstC trace;
    if (argc > 4) {
        context.traceEverOn(true);
        top.trace(&trace, 99);
        trace.open(argv[4]);
    }
#endif
    uint64_t time = 0, cycles = 0, quiet = 0;
    auto edge = [&](int level) {
        top.clk = level;
        Vtop___024root___eval(top.rootp);
#ifdef SF_WAVES
        if (argc > 4) trace.dump(time);
#endif
        time += 5;
    };
    auto tick = [&]() {
        edge(1);
        edge(0);
    };
    top.clk = 0;
    top.rst = 1;
    top.eval();
    for (int i = 0; i < 3; i++) tick();
    top.rst = 0;
    top.eval();
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();     // CPU time: the run's own, on a shared machine too
    uint64_t expected = 0;
    for (const Image &s : sinks) expected += s.items;
    while (!top.done && cycles < limit && quiet < patience) {
        quiet = top.moved ? 0 : quiet + 1;
        tick();
        cycles++;
        if ((cycles & PROGRESS_MASK) == 0) {    // for a progress bar: cycles, items taken
            uint64_t taken = 0;
            for (const Image &s : sinks) taken += s.words ? s.data.size() / s.words : 0;
            fprintf(stderr, "progress %llu %llu %llu\n", (unsigned long long)cycles,
                    (unsigned long long)taken, (unsigned long long)expected);
            fflush(stderr);
        }
    }
    auto t2 = std::chrono::steady_clock::now();
    std::clock_t c2 = std::clock();
    top.final();
#ifdef SF_WAVES
    if (argc > 4) trace.close();
#endif
    for (size_t id = 0; id < sinks.size(); id++) {
        Image &s = sinks[id];
        if (!s.words) continue;
        std::string path = dir + "/sink" + std::to_string(id) + ".bin";
        FILE *f = fopen(path.c_str(), "wb");
        if (!f || fwrite(s.data.data(), 4, s.data.size(), f) != s.data.size())
            fail(path + ": cannot write the captured stream");
        fclose(f);
    }
    const char *end = top.done ? "done" : quiet >= patience ? "deadlock" : "limit";
    printf("{\"cycles\": %llu, \"end\": \"%s\", \"start_seconds\": %.6f, \"run_seconds\": %.6f, "
           "\"run_cpu_seconds\": %.6f}\n",
           (unsigned long long)cycles, end, std::chrono::duration<double>(t1 - t0).count(),
           std::chrono::duration<double>(t2 - t1).count(), double(c2 - c1) / CLOCKS_PER_SEC);
    return top.done ? 0 : quiet >= patience ? 4 : 3;
}
