// A gated recurrent unit over whole sequences (Cho et al. 2014, PyTorch's
// nn.GRU equations and parameter layout), forward and back-propagation
// through time. With gates stacked r, z, n:
//   r = σ(W_ir x + b_ir + W_hr h + b_hr)
//   z = σ(W_iz x + b_iz + W_hz h + b_hz)
//   n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
//   h' = (1 − z) ⊙ n + z ⊙ h
// x is [batch, steps, input], the outputs h_1..h_T are [batch, steps, hidden];
// w_ih [3·hidden, input], w_hh [3·hidden, hidden], b_ih and b_hh [3·hidden].
#pragma once

#include <vector>

namespace shoal {

struct GruShape {
  int batch = 0, steps = 0, input = 0, hidden = 0;
};

// What the forward pass keeps for the backward one, and the backward pass's
// buffers, kept from pass to pass.
struct GruTape {
  std::vector<float> input_gates;  // [batch, steps, 3·hidden]: W_i x + b_i, then r, z, n in place
  std::vector<float> hidden_n;     // [batch, steps, hidden]: W_hn h + b_hn
  std::vector<float> h0;           // [batch, hidden]: the state before step 1
  // The backward pass's: d(the input and hidden gates' pre-activations), and
  // the state each step started from.
  std::vector<float> d_input_gates, d_hidden_gates, h_prev;
};

// Runs the sequence from h0 (null: zeros); writes every step's state to `out`.
void GruForward(const GruShape& s, const float* x, const float* h0, const float* w_ih, const float* w_hh,
                const float* b_ih, const float* b_hh, float* out, GruTape* tape);

// From the outputs' gradient `dout`, sets the parameters' gradients (summed
// over the steps: one set of parameters shared by all) and adds x's into dx
// (when not null). `out` is the forward pass's.
void GruBackward(const GruShape& s, const float* x, const float* out, const float* w_ih, const float* w_hh,
                 GruTape* tape, const float* dout, float* dx, float* dw_ih, float* dw_hh, float* db_ih,
                 float* db_hh);

}  // namespace shoal
