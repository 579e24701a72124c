#include "ops/gru.h"

#include <algorithm>
#include <cstddef>

#include "ops/blas.h"
#include "ops/elementwise.h"
#include "ops/fully_connected.h"
#include "ops/parallel.h"

namespace shoal {
namespace {

// One row's step from its squashed gates r, z (`gates`) and n: the gates
// replace their pre-activations in `g`, `hn` keeps W_hn h + b_hn (from `hg`),
// and the state h becomes (1 − z) n + z h, in `h` and in `out`.
void CombineGates(int H, const float* __restrict gates, const float* __restrict n, const float* __restrict hg,
                  float* __restrict g, float* __restrict hn, float* __restrict h, float* __restrict out) {
  for (int j = 0; j < 2 * H; ++j) g[j] = gates[j];
  for (int j = 0; j < H; ++j) {
    g[2 * H + j] = n[j];
    hn[j] = hg[2 * H + j];
    const float z = gates[H + j];
    const float next = (1.0f - z) * n[j] + z * h[j];
    h[j] = next;
    out[j] = next;
  }
}

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
  // Each row's r and z, then n, squashed a run of rows at a time (a thread's).
  std::vector<float> rz(static_cast<size_t>(s.batch) * 2 * H), n(static_cast<size_t>(s.batch) * H);
  for (int t = 0; t < s.steps; ++t) {
    FullyConnectedForward(s.batch, H, G, h.data(), w_hh, b_hh, gh.data());  // W_h h + b_h
    ParallelFor(
        s.batch,
        [&](int, int begin, int end) {
          auto row_of = [&](int b) { return static_cast<size_t>(b) * s.steps + t; };
          for (int b = begin; b < end; ++b) {
            const float* g = gi + row_of(b) * G;
            const float* hg = gh.data() + static_cast<size_t>(b) * G;
            float* pre = rz.data() + static_cast<size_t>(b) * 2 * H;
            for (int j = 0; j < 2 * H; ++j) pre[j] = g[j] + hg[j];
          }
          const size_t first = static_cast<size_t>(begin) * H, count = static_cast<size_t>(end - begin);
          LogisticRun(count * 2 * H, rz.data() + 2 * first, rz.data() + 2 * first);
          for (int b = begin; b < end; ++b) {
            const float* g = gi + row_of(b) * G;
            const float* hg = gh.data() + static_cast<size_t>(b) * G;
            const float* r = rz.data() + static_cast<size_t>(b) * 2 * H;
            float* pre = n.data() + static_cast<size_t>(b) * H;
            for (int j = 0; j < H; ++j) pre[j] = g[2 * H + j] + r[j] * hg[2 * H + j];
          }
          TanhRun(count * H, n.data() + first, n.data() + first);
          for (int b = begin; b < end; ++b) {
            const size_t row = row_of(b);
            float* g = gi + row * G;
            const float* hg = gh.data() + static_cast<size_t>(b) * G;
            const float* gates = rz.data() + static_cast<size_t>(b) * 2 * H;
            const float* nb = n.data() + static_cast<size_t>(b) * H;
            CombineGates(H, gates, nb, hg, g, tape->hidden_n.data() + row * H,
                         h.data() + static_cast<size_t>(b) * H, out + row * H);
          }
        },
        s.batch * H < (1 << 14) ? 1 : 1 << 30);
  }
}

void GruBackward(const GruShape& s, const float* x, const float* out, const float* w_ih, const float* w_hh,
                 GruTape* tape, const float* dout, float* dx, float* dw_ih, float* dw_hh, float* db_ih,
                 float* db_hh) {
  const int H = s.hidden, G = 3 * s.hidden;
  const size_t rows = static_cast<size_t>(s.batch) * s.steps;
  // Every element of these is written before it is read.
  std::vector<float>& dgi = tape->d_input_gates;
  std::vector<float>& dgh = tape->d_hidden_gates;
  std::vector<float>& h_prev = tape->h_prev;
  dgi.resize(rows * G);
  dgh.resize(rows * G);
  h_prev.resize(rows * H);
  std::vector<float> dh(static_cast<size_t>(s.batch) * H, 0.0f);
  auto previous = [&](int b, int t) {
    const size_t row = static_cast<size_t>(b) * s.steps + t;
    return t > 0 ? out + (row - 1) * H : tape->h0.data() + static_cast<size_t>(b) * H;
  };
  const int gate_tasks = s.batch * H < (1 << 14) ? 1 : 1 << 30;
  for (int t = s.steps - 1; t >= 0; --t) {
    ParallelFor(
        s.batch,
        [&](int, int begin, int end) {
          for (int b = begin; b < end; ++b) {
            const size_t row = static_cast<size_t>(b) * s.steps + t;
            const float* prev = previous(b, t);
            const float* g = tape->input_gates.data() + row * G;
            const float* hn = tape->hidden_n.data() + row * H;
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
