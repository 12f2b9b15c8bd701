// Workload I/O of a native run (sparseforge.sim.native): the stream sources and
// sinks that sparseforge.tb.native builds in Amaranth keep their handshakes,
// back-pressure and ordering in the simulated design; only their items come in
// and go out through these two ports, one DPI call per transfer, from and to the
// memory images the C++ main loads and writes (sim/native_main.cpp).

import "DPI-C" function void sf_source_open(input int id, output longint items,
                                            output int rate, output int seed);
import "DPI-C" function longint sf_source_chunk(input int id, input longint index,
                                               input int chunk);
import "DPI-C" function void sf_sink_open(input int id, output longint items,
                                          output int rate, output int seed);
import "DPI-C" function void sf_sink_chunk(input int id, input int chunk, input longint value);

// Item ``index`` of source ``ID``, loaded on a clock edge out of reset where ``load`` is high;
// item 0 and the source's length, back-pressure rate and seed from the start.
// Items travel 64 bits per call, so a narrow stream costs one call per transfer.
module sf_source_port #(parameter integer ID = 0, parameter integer WIDTH = 32) (
    input clk, input rst, input load, input [63:0] index,
    output reg [WIDTH-1:0] item, output reg [63:0] items,
    output reg [31:0] rate, output reg [31:0] seed);
  localparam integer CHUNKS = (WIDTH + 63) / 64;
  reg [64*CHUNKS-1:0] word;
  longint n;
  int r, s;
  task fetch(input longint at);
    for (int k = 0; k < CHUNKS; k++) word[64*k +: 64] = sf_source_chunk(ID, at, k);
  endtask
  initial begin
    sf_source_open(ID, n, r, s);
    items = n;
    rate = r;
    seed = s;
    fetch(0);
    item = word[WIDTH-1:0];
  end
  always @(posedge clk) if (load && !rst) begin
    fetch(index);
    item <= word[WIDTH-1:0];
  end
endmodule

// Hands ``item`` of sink ``ID`` out on a clock edge out of reset where ``take`` is high; the
// number of items expected, the rate and the seed from the start.
module sf_sink_port #(parameter integer ID = 0, parameter integer WIDTH = 32) (
    input clk, input rst, input take, input [WIDTH-1:0] item, output reg [63:0] items,
    output reg [31:0] rate, output reg [31:0] seed);
  localparam integer CHUNKS = (WIDTH + 63) / 64;
  wire [64*CHUNKS-1:0] word = {{(64*CHUNKS-WIDTH){1'b0}}, item};
  longint n;
  int r, s;
  initial begin
    sf_sink_open(ID, n, r, s);
    items = n;
    rate = r;
    seed = s;
  end
  always @(posedge clk) if (take && !rst)
    for (int k = 0; k < CHUNKS; k++) sf_sink_chunk(ID, k, word[64*k +: 64]);
endmodule
