// A hand-written Verilog design around sparseforge's Tailor (module `tailor`,
// generated with depth=8, width=8, fifo=2, tile=16 by run.py).
//
// Tiles of L = 12 bytes arrive on `in_*`; each is replayed, in order, on
// `out_*`. A tile overbooks the 8-element buffer, so this design plays both
// sides of the Tailor protocol (README, "Driving a Tailor"):
//   parent: fills the first D elements while it holds credits, then streams
//           the bumped ones (indices D .. L-1) with `owfill`, within
//           `fifo_credits`, `last` on index L-1;
//   child:  reads indices 0 .. L-1 in order (a read of a bumped index waits
//           for its owfill), and ends the tile with one shrink of D.
`default_nettype none

module top (
    input  wire       clk,
    input  wire       rst,
    input  wire       in_valid,
    input  wire [7:0] in_data,
    output wire       in_ready,
    output wire       out_valid,
    output wire [7:0] out_data,
    input  wire       out_ready,
    output wire [3:0] occupancy,
    output reg  [7:0] tiles_done
);
    localparam [3:0] D = 4'd8;
    localparam [3:0] LAST = 4'd11;            // L - 1

    // Parent: position in the tile, fill credits, the owfill paid last cycle.
    reg  [3:0] sent;
    reg  [3:0] credits;
    reg        owfill_paid;
    wire [3:0] credit;
    wire [1:0] fifo_credits;
    wire       filling = sent < D;
    wire       may_owfill = fifo_credits > {1'b0, owfill_paid};
    wire       fill_valid = in_valid & filling & (credits != 4'd0);
    wire       owfill_valid = in_valid & ~filling & may_owfill;
    wire       fill_ready, owfill_ready;
    wire       fill_fire = fill_valid & fill_ready;
    wire       owfill_fire = owfill_valid & owfill_ready;
    assign in_ready = filling ? fill_ready & (credits != 4'd0) : owfill_ready & may_owfill;

    // Child: next index to read, responses passed on, the shrink that ends the tile.
    reg  [3:0] next_read;
    reg  [3:0] passed;
    reg        read_all;
    wire       read_ready, read_data_valid, shrink_ready;
    wire       read_fire = ~read_all & read_ready;
    wire       shrink_valid = read_all & (passed == 4'd12);
    wire       shrink_fire = shrink_valid & shrink_ready;
    wire       out_fire = out_valid & out_ready;
    assign out_valid = read_data_valid;

    always @(posedge clk) begin
        if (rst) begin
            sent <= 4'd0;
            credits <= D;
            owfill_paid <= 1'b0;
            next_read <= 4'd0;
            passed <= 4'd0;
            read_all <= 1'b0;
            tiles_done <= 8'd0;
        end else begin
            owfill_paid <= owfill_fire;
            credits <= credits - {3'd0, fill_fire} + credit;
            if (fill_fire | owfill_fire)
                sent <= (sent == LAST) ? 4'd0 : sent + 4'd1;
            if (read_fire) begin
                next_read <= next_read + 4'd1;
                read_all <= next_read == LAST;
            end
            if (out_fire)
                passed <= passed + 4'd1;
            if (shrink_fire) begin
                next_read <= 4'd0;
                passed <= 4'd0;
                read_all <= 1'b0;
                tiles_done <= tiles_done + 8'd1;
            end
        end
    end

    /* verilator lint_off UNUSEDSIGNAL */
    wire update_ready;
    /* verilator lint_on UNUSEDSIGNAL */

    tailor buffer (
        .clk(clk),
        .rst(rst),
        .parent__fill__payload(in_data),
        .parent__fill__valid(fill_valid),
        .parent__fill__ready(fill_ready),
        .parent__owfill__payload({sent == LAST, in_data}),
        .parent__owfill__valid(owfill_valid),
        .parent__owfill__ready(owfill_ready),
        .parent__fifo_credits(fifo_credits),
        .child__read__payload(next_read),
        .child__read__valid(~read_all),
        .child__read__ready(read_ready),
        .child__read_data__payload(out_data),
        .child__read_data__valid(read_data_valid),
        .child__read_data__ready(out_ready),
        .update__payload(12'd0),
        .update__valid(1'b0),
        .update__ready(update_ready),
        .child__shrink__payload(D),
        .child__shrink__valid(shrink_valid),
        .child__shrink__ready(shrink_ready),
        .parent__credit(credit),
        .child__occupancy(occupancy)
    );
endmodule

`default_nettype wire
