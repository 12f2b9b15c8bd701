// Workload I/O of a native run (sparseforge.sim.native): the stream sources and
// sinks that sparseforge.tb.native builds in Amaranth keep their handshakes,
// back-pressure and ordering in the simulated design; only their items come in
// and go out through these two ports, one DPI call per transfer, from and to the
// memory images the C++ main loads and writes (sim/native_main.cpp).

import "DPI-C" function void sf_source_open(input int id, output longint items,
                                            output int rate, output int seed);
import "DPI-C" function void sf_source_item(input int id, input longint index,
                                            output bit [4095:0] item);
import "DPI-C" function void sf_sink_open(input int id, output longint items,
                                          output int rate, output int seed);
import "DPI-C" function void sf_sink_item(input int id, input bit [4095:0] item);

// Item ``index`` of source ``ID``, loaded on the clock edge where ``load`` is high;
// item 0 and the source's length, back-pressure rate and seed from the start.
module sf_source_port #(parameter integer ID = 0, parameter integer WIDTH = 32) (
    input clk, input load, input [63:0] index,
    output reg [WIDTH-1:0] item, output reg [63:0] items,
    output reg [31:0] rate, output reg [31:0] seed);
  bit [4095:0] word;
  longint n;
  int r, s;
  initial begin
    sf_source_open(ID, n, r, s);
    items = n;
    rate = r;
    seed = s;
    sf_source_item(ID, 0, word);
    item = word[WIDTH-1:0];
  end
  always @(posedge clk) if (load) begin
    sf_source_item(ID, index, word);
    item <= word[WIDTH-1:0];
  end
endmodule

// Hands ``item`` of sink ``ID`` out on the clock edge where ``take`` is high; the
// number of items expected, the rate and the seed from the start.
module sf_sink_port #(parameter integer ID = 0, parameter integer WIDTH = 32) (
    input clk, input take, input [WIDTH-1:0] item, output reg [63:0] items,
    output reg [31:0] rate, output reg [31:0] seed);
  bit [4095:0] word;
  longint n;
  int r, s;
  initial begin
    sf_sink_open(ID, n, r, s);
    items = n;
    rate = r;
    seed = s;
  end
  always @(posedge clk) if (take) begin
    word = 0;
    word[WIDTH-1:0] = item;
    sf_sink_item(ID, word);
  end
endmodule
