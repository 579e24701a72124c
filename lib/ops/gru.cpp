#include "ops/gru.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "ops/blas.h"

namespace shoal {
namespace {

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

void GruForward(const GruShape& s, const float* x, const float* h0, const float* w_ih, const float* w_hh,
                const float* b_ih, const float* b_hh, float* out, GruTape* tape) {
  const int H = s.hidden, G = 3 * s.hidden;
  const size_t rows = static_cast<size_t>(s.batch) * s.steps;
  // Every step's input gates at once: one product over batch × steps rows.
  tape->input_gates.resize(rows * G);
  float* gi = tape->input_gates.data();
  for (size_t r = 0; r < rows; ++r) std::copy(b_ih, b_ih + G, gi + r * G);
  Sgemm(false, true, static_cast<int>(rows), G, s.input, 1.0f, x, w_ih, 1.0f, gi);
  tape->hidden_n.resize(rows * H);
  tape->h0.assign(static_cast<size_t>(s.batch) * H, 0.0f);
  if (h0) std::copy(h0, h0 + tape->h0.size(), tape->h0.begin());
  std::vector<float> gh(static_cast<size_t>(s.batch) * G), h(tape->h0);
  for (int t = 0; t < s.steps; ++t) {
    // The hidden gates of every record: W_h h + b_h, [batch, 3·hidden].
    for (int b = 0; b < s.batch; ++b) std::copy(b_hh, b_hh + G, gh.data() + static_cast<size_t>(b) * G);
    Sgemm(false, true, s.batch, G, H, 1.0f, h.data(), w_hh, 1.0f, gh.data());
    for (int b = 0; b < s.batch; ++b) {
      const size_t row = static_cast<size_t>(b) * s.steps + t;
      float* g = gi + row * G;
      const float* hg = gh.data() + static_cast<size_t>(b) * G;
      float* hn = tape->hidden_n.data() + row * H;
      float* hb = h.data() + static_cast<size_t>(b) * H;
      float* o = out + row * H;
      for (int j = 0; j < H; ++j) {
        const float r = Sigmoid(g[j] + hg[j]);
        const float z = Sigmoid(g[H + j] + hg[H + j]);
        const float n = std::tanh(g[2 * H + j] + r * hg[2 * H + j]);
        g[j] = r, g[H + j] = z, g[2 * H + j] = n;
        hn[j] = hg[2 * H + j];
        o[j] = hb[j] = (1.0f - z) * n + z * hb[j];
      }
    }
  }
}

void GruBackward(const GruShape& s, const float* x, const float* out, const float* w_ih, const float* w_hh,
                 const GruTape& tape, const float* dout, float* dx, float* dw_ih, float* dw_hh, float* db_ih,
                 float* db_hh) {
  const int H = s.hidden, G = 3 * s.hidden;
  const size_t rows = static_cast<size_t>(s.batch) * s.steps;
  std::vector<float> dgi(rows * G);                            // d(input gates' pre-activations)
  std::vector<float> dgh(static_cast<size_t>(s.batch) * G);   // d(hidden gates'), one step
  std::vector<float> dh(static_cast<size_t>(s.batch) * H, 0.0f), h_prev(static_cast<size_t>(s.batch) * H);
  std::fill(dw_hh, dw_hh + static_cast<size_t>(G) * H, 0.0f);
  std::fill(db_hh, db_hh + G, 0.0f);
  for (int t = s.steps - 1; t >= 0; --t) {
    for (int b = 0; b < s.batch; ++b) {
      const size_t row = static_cast<size_t>(b) * s.steps + t;
      const float* prev = t > 0 ? out + (row - 1) * H : tape.h0.data() + static_cast<size_t>(b) * H;
      std::copy(prev, prev + H, h_prev.data() + static_cast<size_t>(b) * H);
      const float* g = tape.input_gates.data() + row * G;
      const float* hn = tape.hidden_n.data() + row * H;
      float* di = dgi.data() + row * G;
      float* dhh = dgh.data() + static_cast<size_t>(b) * G;
      float* d = dh.data() + static_cast<size_t>(b) * H;
      for (int j = 0; j < H; ++j) {
        const float r = g[j], z = g[H + j], n = g[2 * H + j];
        const float grad = d[j] + dout[row * H + j];
        const float dn = grad * (1.0f - z) * (1.0f - n * n);
        const float dz = grad * (prev[j] - n) * z * (1.0f - z);
        const float dr = dn * hn[j] * r * (1.0f - r);
        di[j] = dr, di[H + j] = dz, di[2 * H + j] = dn;
        dhh[j] = dr, dhh[H + j] = dz, dhh[2 * H + j] = dn * r;
        d[j] = grad * z;  // h's own path into h'; W_hh's is added below
      }
    }
    // dh_(t-1) += dgh W_hh; dW_hh += dghᵀ h_(t-1); db_hh += Σ dgh.
    Sgemm(false, false, s.batch, H, G, 1.0f, dgh.data(), w_hh, 1.0f, dh.data());
    Sgemm(true, false, G, H, s.batch, 1.0f, dgh.data(), h_prev.data(), 1.0f, dw_hh);
    for (int b = 0; b < s.batch; ++b)
      for (int k = 0; k < G; ++k) db_hh[k] += dgh[static_cast<size_t>(b) * G + k];
  }
  // The input side over every step at once.
  Sgemm(true, false, G, s.input, static_cast<int>(rows), 1.0f, dgi.data(), x, 0.0f, dw_ih);
  std::fill(db_ih, db_ih + G, 0.0f);
  for (size_t r = 0; r < rows; ++r)
    for (int k = 0; k < G; ++k) db_ih[k] += dgi[r * G + k];
  if (dx) Sgemm(false, false, static_cast<int>(rows), s.input, G, 1.0f, dgi.data(), w_ih, 1.0f, dx);
}

}  // namespace shoal
