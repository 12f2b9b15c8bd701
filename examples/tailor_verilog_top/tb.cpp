// Self-checking Verilator testbench for top.v: three tiles of 12 bytes in, the
// same bytes out in order, with random gaps on the input and random
// back-pressure on the output. Prints PASS or FAIL (and exits 1).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "Vtop.h"
#include "verilated.h"

int main(int argc, char **argv) {
    auto context = std::make_unique<VerilatedContext>();
    context->commandArgs(argc, argv);
    auto top = std::make_unique<Vtop>(context.get());

    const int tiles = 3, length = 12;
    std::vector<int> sent, got;
    srand(1);
    for (int i = 0; i < tiles * length; i++) sent.push_back(rand() & 0xff);

    auto tick = [&] {
        top->clk = 1;
        top->eval();
        top->clk = 0;
        top->eval();
    };
    top->rst = 1;
    for (int i = 0; i < 3; i++) tick();
    top->rst = 0;

    size_t fed = 0;
    long cycle = 0;
    for (; cycle < 10000 && top->tiles_done < tiles; cycle++) {
        top->in_valid = fed < sent.size() && rand() % 4 != 0;
        top->in_data = fed < sent.size() ? sent[fed] : 0;
        top->out_ready = rand() % 3 != 0;
        top->eval();
        if (top->in_valid && top->in_ready) fed++;
        if (top->out_valid && top->out_ready) got.push_back(top->out_data);
        tick();
    }
    bool ok = got == sent && top->tiles_done == tiles && top->occupancy == 0;
    if (!ok) {
        printf("FAIL: %zu of %zu bytes back, %d tiles done, occupancy %d after %ld cycles\n",
               got.size(), sent.size(), top->tiles_done, top->occupancy, cycle);
        for (size_t i = 0; i < got.size() && i < sent.size(); i++)
            if (got[i] != sent[i]) printf("  byte %zu: got %d, sent %d\n", i, got[i], sent[i]);
        return 1;
    }
    printf("PASS: %d tiles of %d bytes through an 8-element Tailor in %ld cycles\n", tiles,
           length, cycle);
    top->final();
    return 0;
}
