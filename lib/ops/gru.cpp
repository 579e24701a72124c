#include "ops/gru.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "ops/blas.h"
#include "ops/fully_connected.h"
#include "ops/parallel.h"

namespace shoal {
namespace {

// Both gates' functions from one exp: tanh through the sigmoid is cheaper
// than glibc's tanhf.
float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float Tanh(float x) { return 2.0f * Sigmoid(2.0f * x) - 1.0f; }

}  // namespace

// Rows are (record, step) pairs, record-major: row b·steps + t. The products
// over every step at once (the input side, and the hidden side's weight
// gradients) are fully connected passes over all rows; only what the
// recurrence chains runs step by step.
void GruForward(const GruShape& s, const float* x, const float* h0, const float* w_ih, const float* w_hh,
                const float* b_ih, const float* b_hh, float* out, GruTape* tape) {
  const int H = s.hidden, G = 3 * s.hidden;
  const size_t rows = static_cast<size_t>(s.batch) * s.steps;
  tape->input_gates.resize(rows * G);
  float* gi = tape->input_gates.data();
  FullyConnectedForward(static_cast<int>(rows), s.input, G, x, w_ih, b_ih, gi);
  tape->hidden_n.resize(rows * H);
  tape->h0.assign(static_cast<size_t>(s.batch) * H, 0.0f);
  if (h0) std::copy(h0, h0 + tape->h0.size(), tape->h0.begin());
  std::vector<float> gh(static_cast<size_t>(s.batch) * G), h(tape->h0);
  for (int t = 0; t < s.steps; ++t) {
    FullyConnectedForward(s.batch, H, G, h.data(), w_hh, b_hh, gh.data());  // W_h h + b_h
    ParallelFor(
        s.batch,
        [&](int, int begin, int end) {
          for (int b = begin; b < end; ++b) {
            const size_t row = static_cast<size_t>(b) * s.steps + t;
            float* g = gi + row * G;
            const float* hg = gh.data() + static_cast<size_t>(b) * G;
            float* hn = tape->hidden_n.data() + row * H;
            float* hb = h.data() + static_cast<size_t>(b) * H;
            float* o = out + row * H;
            for (int j = 0; j < H; ++j) {
              const float r = Sigmoid(g[j] + hg[j]);
              const float z = Sigmoid(g[H + j] + hg[H + j]);
              const float n = Tanh(g[2 * H + j] + r * hg[2 * H + j]);
              g[j] = r, g[H + j] = z, g[2 * H + j] = n;  // the gates replace their pre-activations
              hn[j] = hg[2 * H + j];
              o[j] = hb[j] = (1.0f - z) * n + z * hb[j];
            }
          }
        },
        s.batch * H < (1 << 14) ? 1 : 1 << 30);
  }
}

void GruBackward(const GruShape& s, const float* x, const float* out, const float* w_ih, const float* w_hh,
                 const GruTape& tape, const float* dout, float* dx, float* dw_ih, float* dw_hh, float* db_ih,
                 float* db_hh) {
  const int H = s.hidden, G = 3 * s.hidden;
  const size_t rows = static_cast<size_t>(s.batch) * s.steps;
  std::vector<float> dgi(rows * G), dgh(rows * G);  // d(the input and hidden gates' pre-activations)
  std::vector<float> dh(static_cast<size_t>(s.batch) * H, 0.0f);
  auto previous = [&](int b, int t) {
    const size_t row = static_cast<size_t>(b) * s.steps + t;
    return t > 0 ? out + (row - 1) * H : tape.h0.data() + static_cast<size_t>(b) * H;
  };
  const int gate_tasks = s.batch * H < (1 << 14) ? 1 : 1 << 30;
  for (int t = s.steps - 1; t >= 0; --t) {
    ParallelFor(
        s.batch,
        [&](int, int begin, int end) {
          for (int b = begin; b < end; ++b) {
            const size_t row = static_cast<size_t>(b) * s.steps + t;
            const float* prev = previous(b, t);
            const float* g = tape.input_gates.data() + row * G;
            const float* hn = tape.hidden_n.data() + row * H;
            float* di = dgi.data() + row * G;
            float* dhh = dgh.data() + row * G;
            float* d = dh.data() + static_cast<size_t>(b) * H;
            for (int j = 0; j < H; ++j) {
              const float r = g[j], z = g[H + j], n = g[2 * H + j];
              const float grad = d[j] + dout[row * H + j];
              const float dn = grad * (1.0f - z) * (1.0f - n * n);
              const float dz = grad * (prev[j] - n) * z * (1.0f - z);
              const float dr = dn * hn[j] * r * (1.0f - r);
              di[j] = dr, di[H + j] = dz, di[2 * H + j] = dn;
              dhh[j] = dr, dhh[H + j] = dz, dhh[2 * H + j] = dn * r;
              d[j] = grad * z;  // h's own path into h'; W_hh's is added next
            }
          }
        },
        gate_tasks);
    // dh_(t-1) += dgh_t W_hh: step t's rows of dgh are every steps-th.
    ParallelFor(
        s.batch,
        [&](int, int begin, int end) {
          Sgemm(false, false, end - begin, H, G, 1.0f,
                dgh.data() + (static_cast<size_t>(begin) * s.steps + t) * G, s.steps * G, w_hh, H, 1.0f,
                dh.data() + static_cast<size_t>(begin) * H, H);
        },
        static_cast<double>(s.batch) * H * G < (1 << 18) ? 1 : 1 << 30);
  }
  // The weights' gradients over every step at once: W_hh's from the states
  // each step started from, W_ih's (and x's) from the inputs.
  std::vector<float> h_prev(rows * H);
  for (int b = 0; b < s.batch; ++b)
    for (int t = 0; t < s.steps; ++t)
      std::copy(previous(b, t), previous(b, t) + H,
                h_prev.data() + (static_cast<size_t>(b) * s.steps + t) * H);
  FullyConnectedBackward(static_cast<int>(rows), H, G, h_prev.data(), w_hh, dgh.data(), nullptr, dw_hh, db_hh,
                         GradWrite::kAdd);
  FullyConnectedBackward(static_cast<int>(rows), s.input, G, x, w_ih, dgi.data(), dx, dw_ih, db_ih,
                         GradWrite::kAdd);
}

}  // namespace shoal
