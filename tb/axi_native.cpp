// The AXI4 slave memory with DRAM timing of sparseforge.tb.axi_native, beside the
// Verilated design: the rules of that module's docstring, cycle for cycle, as its
// Verilog wrapper (axi_native.VERILOG) calls them. Each call of sf_axi_step is one
// rising clock edge: it takes the pins' values before the edge, moves the memory's
// state on, and returns the registered outputs of the next cycle, with what AR's
// readiness that cycle needs (sf_axi_ends gives the rest, from the AR pins alone).
//
// Written here rather than in gateware because a simulator evaluates gateware every
// cycle whole: the controller's table of bursts in flight, its oldest-per-ID search
// and its DRAM bank timing were a third of the accelerator's simulated logic. Here a
// cycle does only what happens on it.
//
// Settings (source image SOURCE, one item, a 64-bit value a chunk, in the order of
// axi_native.SETTINGS), the contents (image SOURCE + 1, a row a bus's width), the
// final contents and the counters (sinks SINK and SINK + 1): see tb/axi_native.py.
#include "svdpi.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>

extern "C" void sf_source_open(int id, long long *items, int *rate, int *seed);
extern "C" long long sf_source_chunk(int id, long long index, int chunk);
extern "C" void sf_sink_open(int id, long long *items, int *rate, int *seed);
extern "C" void sf_sink_chunk(int id, int chunk, long long value);

namespace {

typedef unsigned __int128 wide;

// The settings' order: axi_native.SETTINGS.
enum Setting {
    SIZE, EXPECTED, INTERLEAVE, LATENCY, TAPS,
    AR_RATE, AR_SEED, AW_RATE, AW_SEED, W_RATE, W_SEED, R_RATE, R_SEED, B_RATE, B_SEED,
    ADDR_WIDTH, DATA_WIDTH, CAPACITY, READS, WRITES, BOOKINGS,
    GROUP_BITS, COLUMN_BITS, BANK_BITS, ROW_BITS, BURST_BYTES,
    CL, TRCD, TRP, TRAS, TRTP, TCCD_L, TRRD_S, TRRD_L, TFAW, TREFI, TRFC, BURST,
    SETTINGS
};
enum Channel { AR, AW, W, R, B, CHANNELS };

const int OKAY = 0, SLVERR = 2, INCR = 1;

int log2(uint64_t v) {
    int n = 0;
    while ((1ull << n) < v) n++;
    return n;
}

// A channel's coin: the house's Galois LFSR, its low 16 bits below the rate.
struct Lfsr {
    uint32_t seed = 1, taps = 0, now = 1;
    void reset() { now = seed | 1; }
    void step() { now = (now & 1) ? (now >> 1) ^ taps : now >> 1; }
};

// One burst in flight: its address fields, completion and beats sent.
struct Burst {
    uint64_t addr = 0, done = 0;
    uint32_t id = 0, len = 0, size = 0, burst = 0, beat = 0;
};

// Where a beat lies: its storage row, byte lanes, bytes, and whether it is SLVERR.
struct Beat {
    uint64_t row;
    uint64_t mask;
    uint32_t bytes;
    bool bad;
};

// The DRAM controller (tb.dram.DramScheduler): books a burst a cycle with the banks'
// open rows and ready cycles, refresh, and the data bus of the last `bookings` bursts.
struct Dram {
    uint64_t cl, trcd, trp, tras, trtp, tccd_l, trrd_s, trrd_l, tfaw, trefi, trfc, burst;
    int g_bits, c_bits, b_bits, r_bits;
    uint64_t now = 0, act_s = 0, last_done = 0;
    uint32_t last = 0;
    bool last_valid = false;
    std::vector<uint8_t> opened;
    std::vector<uint64_t> open_row, epoch, read, pre, group_act, group_burst, booked;
    uint64_t faw[4] = {0, 0, 0, 0};

    void reset() {
        now = act_s = last_done = 0;
        last = 0;
        last_valid = false;
        for (auto *v : {&open_row, &epoch, &read, &pre, &group_act, &group_burst, &booked})
            std::fill(v->begin(), v->end(), 0);
        std::fill(opened.begin(), opened.end(), 0);
        for (auto &f : faw) f = 0;
    }

    uint64_t after_refresh(uint64_t t) const {
        uint64_t phase = t % trefi;
        return t >= trefi && phase < trfc ? t - phase + trfc : t;
    }

    // The booking of `want` on this cycle, and its completion.
    struct Plan {
        uint32_t want, group, bank;
        uint64_t row, act, slot, done;
        bool hit, shared;
    };

    Plan plan(uint32_t want) const {
        Plan p;
        p.want = want;
        p.group = want & ((1u << g_bits) - 1);
        p.bank = p.group | (((want >> (g_bits + c_bits)) & ((1u << b_bits) - 1)) << g_bits);
        p.row = (want >> (g_bits + c_bits + b_bits)) & ((1ull << r_bits) - 1);
        uint64_t s = after_refresh(std::max(now, read[p.bank]));
        bool same_epoch = opened[p.bank] && epoch[p.bank] == s / trefi;
        p.hit = same_epoch && open_row[p.bank] == p.row;
        uint64_t first = std::max(std::max(s, act_s), std::max(group_act[p.group], faw[0]));
        p.act = after_refresh(same_epoch ? std::max(first, std::max(s, pre[p.bank]) + trp)
                                         : first);
        uint64_t earliest = std::max((p.hit ? s : p.act + trcd) + cl, group_burst[p.group]);
        p.slot = clear(earliest);
        p.shared = last_valid && want == last;
        p.done = p.shared ? last_done : p.slot + burst;
        return p;
    }

    // The first cycle from `earliest` starting a burst clear of every one booked:
    // `earliest` or a booked one's end (tb.dram._clear).
    uint64_t clear(uint64_t earliest) const {
        uint64_t best = earliest;
        bool have = false;
        for (size_t k = 0; k <= booked.size(); k++) {
            uint64_t c = k ? booked[k - 1] + burst : earliest;
            bool fits = c >= earliest;
            for (size_t i = 0; fits && i < booked.size(); i++)
                fits = c >= booked[i] + burst || c + burst <= booked[i];
            if (fits && (!have || c < best)) best = c;
            have = have || fits;
        }
        return best;
    }

    bool room() const { return booked.back() + burst <= now; }

    // The clock edge: the cycle counts on; `go` books the plan.
    void edge(bool go, const Plan &p) {
        if (go && !p.shared) {
            uint64_t column = p.slot - cl;
            last = p.want;
            last_valid = true;
            last_done = p.slot + burst;
            for (size_t i = booked.size() - 1; i > 0; i--) booked[i] = booked[i - 1];
            booked[0] = p.slot;
            read[p.bank] = column;
            group_burst[p.group] = p.slot + tccd_l;
            opened[p.bank] = 1;
            open_row[p.bank] = p.row;
            if (p.hit) {
                pre[p.bank] = std::max(pre[p.bank], column + trtp);
            } else {
                epoch[p.bank] = p.act / trefi;
                pre[p.bank] = std::max(p.act + tras, column + trtp);
                act_s = p.act + trrd_s;
                group_act[p.group] = p.act + trrd_l;
                for (int i = 0; i < 3; i++) faw[i] = faw[i + 1];
                faw[3] = p.act + tfaw;
            }
        }
        now++;
    }
};

// A ring of bursts in flight (tb.axi_native._Table).
struct Table {
    std::vector<Burst> slots;
    uint64_t busy = 0;
    bool is_busy(unsigned i) const { return busy >> i & 1; }
    // The busy slots complete by cycle `by`.
    uint64_t due(uint64_t by) const {
        uint64_t out = 0;
        for (uint64_t left = busy; left; left &= left - 1) {
            unsigned i = (unsigned)__builtin_ctzll(left);
            if (slots[i].done <= by) out |= 1ull << i;
        }
        return out;
    }
    // Of the slots `among`, those that are the oldest busy of their ID, the ring's oldest
    // at `base` (AXI's order within an ID). A cycle asks only of the slots due, often none.
    uint64_t heads(uint64_t among, unsigned base) const {
        unsigned mask = slots.size() - 1;        // a power of two
        uint64_t out = 0;
        for (uint64_t left = among; left; left &= left - 1) {
            unsigned i = (unsigned)__builtin_ctzll(left), age = (i - base) & mask;
            bool older = false;
            for (uint64_t other = busy; other && !older; other &= other - 1) {
                unsigned j = (unsigned)__builtin_ctzll(other);
                older = ((j - base) & mask) < age && slots[j].id == slots[i].id;
            }
            if (!older) out |= 1ull << i;
        }
        return out;
    }
};

// The first set bit of `bits` (of n, a power of two) from `base` on, round the ring; n
// if none.
unsigned first(uint64_t bits, unsigned base, unsigned n) {
    if (!bits) return n;
    uint64_t ring = (bits >> base) | (base ? bits << (n - base) : 0);
    if (n < 64) ring &= (1ull << n) - 1;
    return (base + (unsigned)__builtin_ctzll(ring)) & (n - 1);
}

enum Counter { BYTES_READ, BYTES_WRITTEN, READ_BURSTS, WRITE_BURSTS, READ_CYCLES, OVERTAKES,
               INTERLEAVED, ERRORS, DRAM_READS, DRAM_WRITES, SHARED_READS, SHARED_WRITES,
               COUNTERS };

struct Memory {
    int source = 0, sink = 0;
    uint64_t v[SETTINGS];
    int addr_width, lanes, lane_bits, row_bits;
    unsigned reads_n, writes_n;
    uint64_t limit, expected, latency, burst_shift;
    bool interleave;
    std::vector<uint8_t> rows;           // the storage, lanes << row_bits bytes
    uint64_t image_rows = 0;
    Dram dram;
    Lfsr coins[CHANNELS], pick;
    Table reads, writes;

    // The state the gateware resets.
    unsigned r_issue, r_part, w_alloc, w_fill, w_book, w_part, current;
    uint64_t r_far, w_far, booked, w_bad;
    bool turn, going, r_valid, r_bad, b_valid;
    uint32_t answered;
    uint64_t counters[COUNTERS];
    // The registered outputs (not reset in gateware: rdata; the others are).
    uint32_t rid, rresp, bid, bresp;
    bool rlast;
    std::vector<uint8_t> rdata;

    void open(int source_, int sink_) {
        source = source_;
        sink = sink_;
        long long items;
        int rate, seed;
        sf_source_open(source, &items, &rate, &seed);
        for (int k = 0; k < SETTINGS; k++) v[k] = (uint64_t)sf_source_chunk(source, 0, k);
        addr_width = (int)v[ADDR_WIDTH];
        lanes = (int)(v[DATA_WIDTH] / 8);
        lane_bits = log2(lanes);
        row_bits = std::max(log2(v[CAPACITY] / lanes), 1);
        reads_n = (unsigned)v[READS];
        writes_n = (unsigned)v[WRITES];
        limit = v[SIZE];
        expected = v[EXPECTED];
        latency = v[LATENCY];
        interleave = v[INTERLEAVE];
        burst_shift = log2(v[BURST_BYTES]);
        if (lanes > 64 || reads_n > 64 || writes_n > 64) {
            fprintf(stderr, "sf_axi_dram: at most 64 byte lanes and 64 bursts in flight\n");
            exit(2);
        }
        Channel order[CHANNELS] = {AR, AW, W, R, B};
        for (Channel c : order) {
            coins[c].seed = (uint32_t)v[AR_SEED + 2 * c];
            coins[c].taps = (uint32_t)v[TAPS];
        }
        uint32_t r = (uint32_t)v[R_SEED] | 1;
        pick.seed = r << 7 | r >> 25;
        pick.taps = (uint32_t)v[TAPS];
        Dram &d = dram;
        d.cl = v[CL], d.trcd = v[TRCD], d.trp = v[TRP], d.tras = v[TRAS], d.trtp = v[TRTP];
        d.tccd_l = v[TCCD_L], d.trrd_s = v[TRRD_S], d.trrd_l = v[TRRD_L], d.tfaw = v[TFAW];
        d.trefi = v[TREFI], d.trfc = v[TRFC], d.burst = v[BURST];
        d.g_bits = (int)v[GROUP_BITS], d.c_bits = (int)v[COLUMN_BITS];
        d.b_bits = (int)v[BANK_BITS], d.r_bits = (int)v[ROW_BITS];
        size_t banks = (size_t)1 << (d.g_bits + d.b_bits), groups = (size_t)1 << d.g_bits;
        d.opened.assign(banks, 0);
        for (auto *x : {&d.open_row, &d.epoch, &d.read, &d.pre}) x->assign(banks, 0);
        d.group_act.assign(groups, 0);
        d.group_burst.assign(groups, 0);
        d.booked.assign(v[BOOKINGS], 0);
        reads.slots.assign(reads_n, Burst());
        writes.slots.assign(writes_n, Burst());
        rows.assign((size_t)lanes << row_bits, 0);
        rdata.assign(lanes, 0);
        // The contents: a row of `lanes` bytes an item, 64 bits a chunk.
        sf_source_open(source + 1, &items, &rate, &seed);
        image_rows = (uint64_t)items;
        for (uint64_t i = 0; i < image_rows && i < (1ull << row_bits); i++)
            for (int k = 0; 8 * k < lanes; k++) {
                uint64_t word = (uint64_t)sf_source_chunk(source + 1, (long long)i, k);
                for (int b = 0; b < 8 && 8 * k + b < lanes; b++)
                    rows[i * lanes + 8 * k + b] = (uint8_t)(word >> (8 * b));
            }
        sf_sink_open(sink, &items, &rate, &seed);
        sf_sink_open(sink + 1, &items, &rate, &seed);
        reset();
    }

    void reset() {
        r_issue = r_part = w_alloc = w_fill = w_book = w_part = current = 0;
        r_far = w_far = booked = w_bad = 0;
        turn = going = r_valid = r_bad = b_valid = false;
        answered = 0;
        rid = rresp = bid = bresp = 0;
        rlast = false;
        for (auto &c : counters) c = 0;
        for (auto &c : coins) c.reset();
        pick.reset();
        reads.busy = writes.busy = 0;
        for (auto &b : reads.slots) b = Burst();
        for (auto &b : writes.slots) b = Burst();
        dram.reset();
    }

    uint64_t aligned(uint64_t addr, uint32_t size) const {
        uint64_t ones = addr_width >= 64 ? ~0ull : (1ull << addr_width) - 1;
        return addr & (ones >> size << size);
    }

    // The DRAM bursts an AXI burst spans, first and last (tb.axi_native._dram_bursts).
    void spans(uint64_t addr, uint32_t size, uint32_t len, uint64_t &lo, uint64_t &hi) const {
        wide start = aligned(addr, size);
        wide end = start + ((wide)(len + 1) << size) - 1;
        lo = (uint64_t)(start >> burst_shift);
        hi = (uint64_t)(end >> burst_shift);
    }

    Beat beat(const Burst &b) const {
        Beat out;
        wide at = (wide)aligned(b.addr, b.size) + ((wide)(b.beat & 0xFF) << b.size);
        out.row = (uint64_t)(at >> lane_bits) & ((1ull << row_bits) - 1);
        out.bytes = (1u << b.size) & 0xFF;
        uint64_t below = ((1ull << b.size) - 1) & ((1ull << lane_bits) - 1);
        uint64_t low = (uint64_t)at & ((1ull << lane_bits) - 1);
        out.mask = 0;
        for (int k = 0; k < lanes; k++)     // lanes agreeing with the address above size
            if (((k ^ low) & ~below & ((1ull << lane_bits) - 1)) == 0) out.mask |= 1ull << k;
        bool wide_ = lane_bits < 7 && b.size > (uint32_t)lane_bits;
        out.bad = wide_ || b.burst != INCR || at + out.bytes > limit;
        return out;
    }

    bool coin(Channel c) const { return (coins[c].now & 0xFFFF) < v[AR_RATE + 2 * c]; }

    bool want_w() const { return w_book != w_fill; }

    // AR's readiness on this cycle but for the burst's own span (sf_axi_ends).
    bool ar_ok() const {
        return !reads.is_busy(r_issue) && coin(AR) && !(want_w() && turn) && dram.room();
    }

    struct Pins {
        bool arvalid, rready, awvalid, wvalid, wlast, bready;
        uint32_t arid, arlen, arsize, arburst, awid, awlen, awsize, awburst;
        uint64_t araddr, awaddr;
        const svBitVecVal *wdata, *wstrb;
    };

    void step(const Pins &p) {
        unsigned W2 = 2 * writes_n;
        unsigned aslot = w_alloc % writes_n, fslot = w_fill % writes_n,
                 bslot = w_book % writes_n;
        bool c_ar = coin(AR), c_aw = coin(AW), c_w = coin(W), c_r = coin(R), c_b = coin(B);

        // -- booking: an AR's DRAM bursts as it waits; a written burst's after its beats
        bool want_r = p.arvalid && !reads.is_busy(r_issue) && c_ar;
        bool want_w_ = want_w(), room = dram.room();
        bool grant_w = want_w_ && (turn || !want_r) && room;
        bool grant_r = want_r && !(want_w_ && (turn || !want_r)) && room;
        uint64_t r_first = 0, r_last = 0, w_first = 0, w_last = 0;
        spans(p.araddr, p.arsize, p.arlen, r_first, r_last);
        const Burst &booking = writes.slots[bslot];
        if (grant_w) spans(booking.addr, booking.size, booking.len, w_first, w_last);
        bool go = grant_r || grant_w;
        Dram::Plan plan{};
        if (go) plan = dram.plan((uint32_t)(grant_w ? w_first + w_part : r_first + r_part));
        bool r_end = r_first + r_part == r_last;
        uint64_t r_done = std::max(r_far, plan.done);
        bool arready = grant_r && r_end;
        bool w_end = w_first + w_part == w_last;
        uint64_t w_done = std::max(w_far, plan.done);

        // -- R: a due read's beat into the register
        bool load = false, last = false;
        unsigned slot = 0, oldest = 0;
        Burst chosen;
        Beat rb{};
        if ((!r_valid || p.rready) && c_r && reads.busy) {
            uint64_t candidates;
            if (!interleave && going) {
                candidates = 1ull << current;
            } else {
                candidates = reads.heads(reads.due(dram.now + 1), r_issue);
            }
            unsigned base = interleave ? pick.now & (reads_n - 1) : r_issue;
            slot = first(candidates, base, reads_n);
            if (slot < reads_n) {
                load = true;
                chosen = reads.slots[slot];
                rb = beat(chosen);
                last = chosen.beat == chosen.len;
                oldest = first(reads.busy, r_issue, reads_n);
            }
        }

        // -- AW and W
        bool awready = c_aw && !writes.is_busy(aslot);
        bool took_aw = p.awvalid && awready;
        const Burst filling = writes.slots[fslot];
        bool wready = c_w && w_fill != w_alloc;
        bool took_w = p.wvalid && wready;
        Beat wb{};
        if (took_w) wb = beat(filling);

        // -- B: the oldest due answer that is its ID's oldest
        bool give = false, bad_b = false;
        unsigned answer = 0;
        if ((!b_valid || p.bready) && c_b && (writes.busy & booked)) {
            uint64_t answers = writes.heads(writes.due(dram.now + 1) & booked, aslot);
            answer = first(answers, aslot, writes_n);
            if (answer < writes_n) {
                give = true;
                bad_b = w_bad >> answer & 1;
            }
        }
        bool b_taken = b_valid && p.bready;
        bool reading = reads.busy || r_valid;

        // -- the clock edge, in the gateware's order (a later assignment wins)
        uint64_t now = dram.now;
        bool was_going = going;
        unsigned was_current = current;
        if (want_r && want_w_ && room) turn = !turn;
        if (grant_r) {
            r_part = r_end ? 0 : (r_part + 1) & 0x3FF;
            r_far = r_end ? 0 : r_done;
        }
        unsigned issued = r_issue;
        if (arready) {
            Burst &b = reads.slots[r_issue];
            b.id = p.arid, b.addr = p.araddr, b.len = p.arlen, b.size = p.arsize;
            b.burst = p.arburst, b.beat = 0;
            b.done = std::max(r_done, now) + latency;
            r_issue = (r_issue + 1) % reads_n;
        }
        if (grant_w) {
            w_part = w_end ? 0 : (w_part + 1) & 0x3FF;
            w_far = w_end ? 0 : w_done;
            if (w_end) {
                writes.slots[bslot].done = std::max(w_done, now) + latency;
                w_book = (w_book + 1) % W2;
                booked |= 1ull << bslot;
            }
        }
        if (go)             // a DRAM burst on the data bus, or answered with the one before
            counters[plan.shared ? (grant_w ? SHARED_WRITES : SHARED_READS)
                                 : (grant_w ? DRAM_WRITES : DRAM_READS)] += 1;
        dram.edge(go, plan);
        if (load) {
            r_valid = true;
            rid = chosen.id;
            rlast = last;
            rresp = rb.bad ? SLVERR : OKAY;
            r_bad = rb.bad;
            for (int k = 0; k < lanes; k++)      // read before this edge's write
                rdata[k] = !rb.bad && rb.mask >> k & 1 ? rows[rb.row * lanes + k] : 0;
            reads.slots[slot].beat = (chosen.beat + 1) & 0xFF;
            current = slot;
            going = !last;
            if (last) reads.busy &= ~(1ull << slot);
        } else if (p.rready) {
            r_valid = false;
        }
        if (arready) reads.busy |= 1ull << issued;
        counters[READ_BURSTS] += arready;
        if (load) {
            counters[BYTES_READ] += rb.bytes;
            counters[ERRORS] += rb.bad;
            counters[OVERTAKES] += chosen.beat == 0 && slot != oldest;
            counters[INTERLEAVED] += was_going && slot != was_current;
        }
        counters[READ_CYCLES] += reading;
        if (took_aw) {
            Burst &b = writes.slots[aslot];
            b.id = p.awid, b.addr = p.awaddr, b.len = p.awlen, b.size = p.awsize;
            b.burst = p.awburst, b.beat = 0;
            w_alloc = (w_alloc + 1) % W2;
            writes.busy |= 1ull << aslot;
            booked &= ~(1ull << aslot);
            w_bad &= ~(1ull << aslot);
        }
        if (took_w) {
            writes.slots[fslot].beat = (filling.beat + 1) & 0xFF;
            bool at_last = filling.beat == filling.len;
            if (wb.bad || p.wlast != at_last) w_bad |= 1ull << fslot;
            if (at_last) w_fill = (w_fill + 1) % W2;
            if (!wb.bad) {
                uint8_t *row = &rows[wb.row * lanes];
                for (int k = 0; k < lanes; k++)
                    if (p.wstrb[k / 32] >> (k % 32) & 1 && wb.mask >> k & 1)
                        row[k] = (uint8_t)(p.wdata[k / 4] >> (8 * (k % 4)));
            }
        }
        if (give) {
            b_valid = true;
            bid = writes.slots[answer].id;
            bresp = bad_b ? SLVERR : OKAY;
            writes.busy &= ~(1ull << answer);
        } else if (p.bready) {
            b_valid = false;
        }
        if (b_taken) answered++;
        counters[WRITE_BURSTS] += took_aw;
        if (took_w) counters[BYTES_WRITTEN] += wb.bytes;
        counters[ERRORS] += give && bad_b;
        for (auto &c : coins) c.step();
        pick.step();
    }

    bool done() const {
        return answered >= expected && !reads.busy && !writes.busy && !r_valid && !b_valid;
    }

    void close() {
        for (uint64_t i = 0; i < image_rows; i++) {
            for (int k = 0; 8 * k < std::max(lanes, 4); k++) {
                uint64_t word = 0;
                for (int b = 0; b < 8 && 8 * k + b < lanes; b++)
                    word |= (uint64_t)rows[(i % (1ull << row_bits)) * lanes + 8 * k + b] << (8 * b);
                sf_sink_chunk(sink, k, (long long)word);
            }
        }
        for (int k = 0; k < COUNTERS; k++) sf_sink_chunk(sink + 1, 0, (long long)counters[k]);
    }
};

std::vector<Memory *> memories(64);

Memory &memory(int source) {
    if (source < 0 || source >= (int)memories.size() || !memories[source]) {
        fprintf(stderr, "sf_axi_dram: memory %d was never opened\n", source);
        exit(2);
    }
    return *memories[source];
}

}  // namespace

extern "C" void sf_axi_open(int source, int sink) {
    if (source < 0 || source >= (int)memories.size()) {
        fprintf(stderr, "sf_axi_dram: source id %d out of range\n", source);
        exit(2);
    }
    delete memories[source];
    memories[source] = new Memory();
    memories[source]->open(source, sink);
}

extern "C" void sf_axi_close(int source) { memory(source).close(); }

// Whether the AR burst on the pins books its last DRAM burst with `part` booked before
// (its readiness, with the step's ar_ok); false before the memory is open.
extern "C" svBit sf_axi_ends(int source, int part, long long addr, int size, int len) {
    if (source < 0 || source >= (int)memories.size() || !memories[source]) return 0;
    uint64_t lo, hi;
    memories[source]->spans((uint64_t)addr, (uint32_t)size, (uint32_t)len, lo, hi);
    return lo + (uint64_t)part == hi;
}

// One rising edge (rst: a reset's). In: ar and aw {valid, burst[1:0], size[2:0],
// len[7:0]}, ctl {bready, rready, wlast, wvalid}. Out, the next cycle's registers: rctl
// {rvalid, rlast, rresp[1:0]}; state bits 25:16 r_part, 7 done, 6 ar_ok, 5 wready,
// 4 awready, 2 bvalid, 1:0 bresp.
extern "C" void sf_axi_step(int source, svBit rst, int arid, int ar, long long araddr,
                            int awid, int aw, long long awaddr, const svBitVecVal *wdata,
                            const svBitVecVal *wstrb, int ctl, int *rid, svBitVecVal *rdata,
                            int *rctl, int *bid, int *state) {
    Memory &m = memory(source);
    if (rst) {
        m.reset();
    } else {
        Memory::Pins p;
        p.arvalid = ar >> 13 & 1, p.arburst = ar >> 11 & 3, p.arsize = ar >> 8 & 7;
        p.arlen = ar & 0xFF, p.arid = (uint32_t)arid, p.araddr = (uint64_t)araddr;
        p.awvalid = aw >> 13 & 1, p.awburst = aw >> 11 & 3, p.awsize = aw >> 8 & 7;
        p.awlen = aw & 0xFF, p.awid = (uint32_t)awid, p.awaddr = (uint64_t)awaddr;
        p.wvalid = ctl & 1, p.wlast = ctl >> 1 & 1, p.rready = ctl >> 2 & 1;
        p.bready = ctl >> 3 & 1;
        p.wdata = wdata, p.wstrb = wstrb;
        m.step(p);
    }
    *rid = (int)m.rid;
    for (int k = 0; k < m.lanes; k += 4) {
        uint32_t word = 0;
        for (int b = 0; b < 4 && k + b < m.lanes; b++) word |= (uint32_t)m.rdata[k + b] << (8 * b);
        rdata[k / 4] = word;
    }
    *rctl = m.r_valid << 3 | m.rlast << 2 | (int)m.rresp;
    *bid = (int)m.bid;
    bool awready = m.coin(AW) && !m.writes.is_busy(m.w_alloc % m.writes_n);
    bool wready = m.coin(W) && m.w_fill != m.w_alloc;
    *state = (int)(m.r_part << 16 | m.done() << 7 | m.ar_ok() << 6 | wready << 5 |
                   awready << 4 | m.b_valid << 2 | m.bresp);
}
