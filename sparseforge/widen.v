// Yosys techmap: give every word-level cell operands as wide as the operation,
// by explicit zero- or sign-extension.
//
// Verilog extends mismatched operands implicitly by exactly these rules, so the
// mapping changes no behaviour; it only spells the extension out, which keeps
// `verilator --lint-only -Wall` free of WIDTHEXPAND on generated code. A cell
// already uniform is left alone (_TECHMAP_FAIL_), which also ends recursion.
//
// The extension is chosen with generate-if, not `S ? $signed(A) : A`: a
// conditional with one unsigned branch is unsigned, which would zero-extend
// a signed operand.

(* techmap_celltype = "$add $sub $mul $and $or $xor $xnor" *)
module _sf_widen_binary (A, B, Y);
  parameter A_SIGNED = 0;
  parameter B_SIGNED = 0;
  parameter A_WIDTH = 1;
  parameter B_WIDTH = 1;
  parameter Y_WIDTH = 1;
  parameter _TECHMAP_CELLTYPE_ = "";
  input [A_WIDTH-1:0] A;
  input [B_WIDTH-1:0] B;
  output [Y_WIDTH-1:0] Y;
  wire _TECHMAP_FAIL_ = A_WIDTH == Y_WIDTH && B_WIDTH == Y_WIDTH;
  localparam S = A_SIGNED && B_SIGNED;
  wire [Y_WIDTH-1:0] a, b;
  generate
    if (S) begin : sign_extend
      assign a = $signed(A);
      assign b = $signed(B);
    end else begin : zero_extend
      assign a = A;
      assign b = B;
    end
    if (_TECHMAP_CELLTYPE_ == "$add") assign Y = a + b;
    else if (_TECHMAP_CELLTYPE_ == "$sub") assign Y = a - b;
    else if (_TECHMAP_CELLTYPE_ == "$mul") assign Y = a * b;
    else if (_TECHMAP_CELLTYPE_ == "$and") assign Y = a & b;
    else if (_TECHMAP_CELLTYPE_ == "$or") assign Y = a | b;
    else if (_TECHMAP_CELLTYPE_ == "$xor") assign Y = a ^ b;
    else assign Y = a ~^ b;
  endgenerate
endmodule

(* techmap_celltype = "$lt $le $gt $ge $eq $ne" *)
module _sf_widen_compare (A, B, Y);
  parameter A_SIGNED = 0;
  parameter B_SIGNED = 0;
  parameter A_WIDTH = 1;
  parameter B_WIDTH = 1;
  parameter Y_WIDTH = 1;
  parameter _TECHMAP_CELLTYPE_ = "";
  input [A_WIDTH-1:0] A;
  input [B_WIDTH-1:0] B;
  output [Y_WIDTH-1:0] Y;
  wire _TECHMAP_FAIL_ = A_WIDTH == B_WIDTH || Y_WIDTH != 1;
  localparam S = A_SIGNED && B_SIGNED;
  localparam W = A_WIDTH > B_WIDTH ? A_WIDTH : B_WIDTH;
  wire [W-1:0] a, b;
  generate
    if (S) begin : sign_extend
      assign a = $signed(A);
      assign b = $signed(B);
    end else begin : zero_extend
      assign a = A;
      assign b = B;
    end
    if (S && _TECHMAP_CELLTYPE_ == "$lt") assign Y = $signed(a) < $signed(b);
    else if (S && _TECHMAP_CELLTYPE_ == "$le") assign Y = $signed(a) <= $signed(b);
    else if (S && _TECHMAP_CELLTYPE_ == "$gt") assign Y = $signed(a) > $signed(b);
    else if (S && _TECHMAP_CELLTYPE_ == "$ge") assign Y = $signed(a) >= $signed(b);
    else if (_TECHMAP_CELLTYPE_ == "$lt") assign Y = a < b;
    else if (_TECHMAP_CELLTYPE_ == "$le") assign Y = a <= b;
    else if (_TECHMAP_CELLTYPE_ == "$gt") assign Y = a > b;
    else if (_TECHMAP_CELLTYPE_ == "$ge") assign Y = a >= b;
    else if (_TECHMAP_CELLTYPE_ == "$eq") assign Y = a == b;
    else assign Y = a != b;
  endgenerate
endmodule

(* techmap_celltype = "$not $neg $pos" *)
module _sf_widen_unary (A, Y);
  parameter A_SIGNED = 0;
  parameter A_WIDTH = 1;
  parameter Y_WIDTH = 1;
  parameter _TECHMAP_CELLTYPE_ = "";
  input [A_WIDTH-1:0] A;
  output [Y_WIDTH-1:0] Y;
  wire _TECHMAP_FAIL_ = A_WIDTH == Y_WIDTH;
  wire [Y_WIDTH-1:0] a;
  generate
    if (A_SIGNED) begin : sign_extend
      assign a = $signed(A);
    end else begin : zero_extend
      assign a = A;
    end
    if (_TECHMAP_CELLTYPE_ == "$not") assign Y = ~a;
    else if (_TECHMAP_CELLTYPE_ == "$neg") assign Y = -a;
    else assign Y = a;
  endgenerate
endmodule

// A left shift's operand as wide as its result: `wreduce` narrows the operand to its
// bits that are not constant zero (a burst's beats when the bus's AxLEN is narrow) and
// leaves the result wide. The shift amount is self-determined, so it stays as it is.
(* techmap_celltype = "$shl $sshl" *)
module _sf_widen_shift (A, B, Y);
  parameter A_SIGNED = 0;
  parameter B_SIGNED = 0;
  parameter A_WIDTH = 1;
  parameter B_WIDTH = 1;
  parameter Y_WIDTH = 1;
  input [A_WIDTH-1:0] A;
  input [B_WIDTH-1:0] B;
  output [Y_WIDTH-1:0] Y;
  wire _TECHMAP_FAIL_ = A_WIDTH >= Y_WIDTH || B_SIGNED;
  wire [Y_WIDTH-1:0] a;
  generate
    if (A_SIGNED) begin : sign_extend
      assign a = $signed(A);
    end else begin : zero_extend
      assign a = A;
    end
  endgenerate
  assign Y = a << B;
endmodule

// `!x` on a word: Verilator wants a 1-bit operand, so reduce the word first.
(* techmap_celltype = "$logic_not" *)
module _sf_logic_not (A, Y);
  parameter A_SIGNED = 0;
  parameter A_WIDTH = 1;
  parameter Y_WIDTH = 1;
  input [A_WIDTH-1:0] A;
  output [Y_WIDTH-1:0] Y;
  wire _TECHMAP_FAIL_ = A_WIDTH == 1 || Y_WIDTH != 1;
  wire any = |A;
  assign Y = ~any;
endmodule
