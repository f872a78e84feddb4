// emulate.cc runs the NVRTC attention kernels (attentionSource, written next to
// this file as attention.cu by kernels_test.go) on the host: every CUDA thread
// is a std::thread, __syncthreads is a block barrier, warp shuffles and
// mma.sync.m16n8k16 are emulated per the PTX ISA fragment layouts, and blocks
// run one after another so one array serves as shared memory. It then checks
// O, the LSE and dQ, dK, dV against a double-precision reference.
//
// Build: g++ -std=c++20 -O1 -pthread -fno-strict-aliasing -I<dir> emulate.cc
// Exit status 0 and "PASS" when every case is within tolerance.
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#define DCP_HOST_EMULATION 1
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(n)

struct Dim3 {
  unsigned x, y, z;
};
static thread_local Dim3 threadIdx;
static Dim3 blockIdx, blockDim, gridDim;

static inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}

static std::barrier<>* block_barrier;
static std::vector<std::unique_ptr<std::barrier<>>> warp_barriers;

struct WarpScratch {
  float f[32];
  unsigned a[32][4];
  unsigned b[32][2];
};
static std::vector<WarpScratch> scratch;

static void __syncthreads() { block_barrier->arrive_and_wait(); }
static inline int warp_id() { return (int)(threadIdx.x >> 5); }
static inline int lane_id() { return (int)(threadIdx.x & 31); }
static inline void warp_sync() { warp_barriers[warp_id()]->arrive_and_wait(); }

static float __shfl_xor_sync(unsigned, float v, int mask) {
  WarpScratch& s = scratch[warp_id()];
  s.f[lane_id()] = v;
  warp_sync();
  float r = s.f[lane_id() ^ mask];
  warp_sync();
  return r;
}

static std::mutex atomic_mu;
static float atomicAdd(float* p, float v) {
  std::lock_guard<std::mutex> lock(atomic_mu);
  float old = *p;
  *p = old + v;
  return old;
}

static float bf16f(unsigned short x) { return __uint_as_float(((unsigned)x) << 16); }

// D = A(16x16, row) * B(16x8, col) + C with the m16n8k16 .bf16 fragment layout:
// g = lane/4, t = 2*(lane%4); a[i] holds row g + 8*(i&1), columns t + 8*(i>>1)
// and the next; b[i] holds rows (k) t + 8*i and the next of column g; c holds
// (g, t), (g, t+1), (g+8, t), (g+8, t+1).
static void dcp_emulated_mma(float* c, const unsigned* a, const unsigned* b) {
  WarpScratch& s = scratch[warp_id()];
  const int lane = lane_id();
  for (int i = 0; i < 4; ++i) s.a[lane][i] = a[i];
  for (int i = 0; i < 2; ++i) s.b[lane][i] = b[i];
  warp_sync();
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = (l & 3) * 2;
    for (int i = 0; i < 4; ++i) {
      const int row = g + 8 * (i & 1), col = t + 8 * (i >> 1);
      A[row][col] = bf16f((unsigned short)(s.a[l][i] & 0xffffu));
      A[row][col + 1] = bf16f((unsigned short)(s.a[l][i] >> 16));
    }
    for (int i = 0; i < 2; ++i) {
      const int k = t + 8 * i;
      B[k][g] = bf16f((unsigned short)(s.b[l][i] & 0xffffu));
      B[k + 1][g] = bf16f((unsigned short)(s.b[l][i] >> 16));
    }
  }
  warp_sync();
  const int g = lane >> 2, t = (lane & 3) * 2;
  const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {t, t + 1, t, t + 1};
  for (int e = 0; e < 4; ++e) {
    float acc = 0.f;
    for (int k = 0; k < 16; ++k) acc += A[rows[e]][k] * B[k][cols[e]];
    c[e] += acc;
  }
}

#include "attention.cu"

alignas(16) u32x4 smem_words[(128 * 1024) / 16];

template <class F>
static void launch(Dim3 grid, unsigned threads, unsigned shared_bytes, F kernel) {
  if (shared_bytes > sizeof smem_words) {
    std::fprintf(stderr, "shared memory %u too large\n", shared_bytes);
    std::exit(2);
  }
  gridDim = grid;
  blockDim = {threads, 1, 1};
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        blockIdx = {x, y, z};
        std::memset(smem_words, 0xff, sizeof smem_words);  // NaN: reading unwritten shared memory shows
        std::barrier<> block(threads);
        block_barrier = &block;
        warp_barriers.clear();
        for (unsigned w = 0; w < threads / 32; ++w) warp_barriers.push_back(std::make_unique<std::barrier<>>(32));
        scratch.assign(threads / 32, WarpScratch{});
        std::vector<std::thread> ts;
        for (unsigned i = 0; i < threads; ++i)
          ts.emplace_back([i, &kernel] {
            threadIdx = {i, 0, 0};
            kernel();
          });
        for (auto& t : ts) t.join();
      }
}

struct Case {
  int B, S, H, HKV, DQK, DV;
};

using FwdFn = void (*)(const bf16*, const bf16*, const bf16*, bf16*, float*, int, int, int, float);
using BwdFn = void (*)(const bf16*, const bf16*, const bf16*, const bf16*, const float*, const float*, float*, float*,
                       float*, int, int, int, float, float);

static bool pick(int dqk, int dv, FwdFn* f, BwdFn* b) {
  if (dqk == 64 && dv == 64) *f = attn_fwd_64_64, *b = attn_bwd_64_64;
  else if (dqk == 128 && dv == 128) *f = attn_fwd_128_128, *b = attn_bwd_128_128;
  else if (dqk == 192 && dv == 128) *f = attn_fwd_192_128, *b = attn_bwd_192_128;
  else if (dqk == 192 && dv == 192) *f = attn_fwd_192_192, *b = attn_bwd_192_192;
  else return false;
  return true;
}

static unsigned short to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}

// relerr is max |got - want| / max |want|.
static double relerr(const std::vector<double>& want, const std::vector<float>& got) {
  double num = 0, den = 1e-12;
  for (size_t i = 0; i < want.size(); ++i) {
    num = std::max(num, std::fabs(got[i] - want[i]));
    den = std::max(den, std::fabs(want[i]));
  }
  return num / den;
}

static bool run_case(const Case& c) {
  FwdFn fwd;
  BwdFn bwd;
  if (!pick(c.DQK, c.DV, &fwd, &bwd)) return false;
  const int B = c.B, S = c.S, H = c.H, HKV = c.HKV, DQK = c.DQK, DV = c.DV;
  const size_t nq = (size_t)B * S * H * DQK, nk = (size_t)B * S * HKV * DQK, nv = (size_t)B * S * HKV * DV,
               no = (size_t)B * S * H * DV, nl = (size_t)B * H * S;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  std::vector<bf16> q(nq), k(nk), v(nv), dout(no), o(no), dq(nq), dk(nk), dv(nv);
  for (auto& x : q) x = to_bf16(uni(rng));
  for (auto& x : k) x = to_bf16(uni(rng));
  for (auto& x : v) x = to_bf16(uni(rng));
  for (auto& x : dout) x = to_bf16(uni(rng));
  std::vector<float> lse(nl), dsum(nl), dqa(nq, 0.f), dka(nk, 0.f), dva(nv, 0.f);
  const double scale = 1.0 / std::sqrt((double)DQK);
  const float scale_log2 = (float)(scale * M_LOG2E);
  const unsigned blocks = (unsigned)((S + 63) / 64);

  const unsigned fwd_smem = 2u * (64u * (DQK + 8) * 2u + 64u * (DV + 8));
  launch({blocks, (unsigned)H, (unsigned)B}, 128, fwd_smem,
         [&] { fwd(q.data(), k.data(), v.data(), o.data(), lse.data(), S, H, HKV, scale_log2); });
  const long long rows = (long long)B * S * H;
  launch({(unsigned)((rows + 7) / 8), 1, 1}, 256, 0,
         [&] { attn_bwd_dot(o.data(), dout.data(), dsum.data(), S, H, DV, rows); });
  const unsigned bwd_smem = 2u * (2u * 64u * (DQK + 8) + 2u * 64u * (DV + 8) + 2u * 64u * 72u) + 4u * 2u * 64u;
  launch({blocks, (unsigned)H, (unsigned)B}, 256, bwd_smem, [&] {
    bwd(q.data(), k.data(), v.data(), dout.data(), lse.data(), dsum.data(), dqa.data(), dka.data(), dva.data(), S, H,
        HKV, scale_log2, (float)scale);
  });
  launch({2, 1, 1}, 256, 0, [&] { f32_to_bf16(dqa.data(), dq.data(), (long long)nq); });

  // Reference in double.
  std::vector<double> ro(no), rl(nl), rdq(nq, 0.0), rdk(nk, 0.0), rdv(nv, 0.0);
  std::vector<double> p(S), dp(S);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const int hk = h / (H / HKV);
      for (int i = 0; i < S; ++i) {
        const bf16* qi = &q[(((size_t)b * S + i) * H + h) * DQK];
        double m = -INFINITY;
        for (int j = 0; j <= i; ++j) {
          const bf16* kj = &k[(((size_t)b * S + j) * HKV + hk) * DQK];
          double s = 0;
          for (int d = 0; d < DQK; ++d) s += (double)bf16f(qi[d]) * bf16f(kj[d]);
          p[j] = s * scale;
          m = std::max(m, p[j]);
        }
        double l = 0;
        for (int j = 0; j <= i; ++j) l += (p[j] = std::exp(p[j] - m));
        for (int j = 0; j <= i; ++j) p[j] /= l;
        rl[((size_t)b * H + h) * S + i] = (m + std::log(l)) * M_LOG2E;
        double* oi = &ro[(((size_t)b * S + i) * H + h) * DV];
        const bf16* doi = &dout[(((size_t)b * S + i) * H + h) * DV];
        for (int j = 0; j <= i; ++j) {
          const bf16* vj = &v[(((size_t)b * S + j) * HKV + hk) * DV];
          for (int d = 0; d < DV; ++d) oi[d] += p[j] * bf16f(vj[d]);
        }
        double di = 0;
        for (int d = 0; d < DV; ++d) di += oi[d] * bf16f(doi[d]);
        for (int j = 0; j <= i; ++j) {
          const bf16* vj = &v[(((size_t)b * S + j) * HKV + hk) * DV];
          double s = 0;
          for (int d = 0; d < DV; ++d) s += (double)bf16f(doi[d]) * bf16f(vj[d]);
          dp[j] = p[j] * (s - di) * scale;  // dS scaled: gradient of the raw q.k product
        }
        for (int j = 0; j <= i; ++j) {
          const bf16* kj = &k[(((size_t)b * S + j) * HKV + hk) * DQK];
          double* dkj = &rdk[(((size_t)b * S + j) * HKV + hk) * DQK];
          double* dvj = &rdv[(((size_t)b * S + j) * HKV + hk) * DV];
          double* dqi = &rdq[(((size_t)b * S + i) * H + h) * DQK];
          for (int d = 0; d < DQK; ++d) {
            dqi[d] += dp[j] * bf16f(kj[d]);
            dkj[d] += dp[j] * bf16f(qi[d]);
          }
          for (int d = 0; d < DV; ++d) dvj[d] += p[j] * bf16f(doi[d]);
        }
      }
    }

  std::vector<float> of(no), dqf(nq);
  for (size_t i = 0; i < no; ++i) of[i] = bf16f(o[i]);
  for (size_t i = 0; i < nq; ++i) dqf[i] = bf16f(dq[i]);
  double lse_err = 0;
  for (size_t i = 0; i < nl; ++i) lse_err = std::max(lse_err, std::fabs(lse[i] - rl[i]));
  const double e_o = relerr(ro, of), e_dq = relerr(rdq, dqa), e_dk = relerr(rdk, dka), e_dv = relerr(rdv, dva),
               e_conv = relerr(rdq, dqf);
  const bool ok = e_o < 0.02 && lse_err < 2e-3 && e_dq < 0.05 && e_dk < 0.05 && e_dv < 0.05 && e_conv < 0.05;
  std::printf("%s B=%d S=%d H=%d HKV=%d D=%d/%d: O %.2e, LSE %.2e (abs, log2), dQ %.2e, dK %.2e, dV %.2e, dQ bf16 %.2e\n",
              ok ? "ok  " : "FAIL", B, S, H, HKV, DQK, DV, e_o, lse_err, e_dq, e_dk, e_dv, e_conv);
  return ok;
}

static bool check_fill() {
  std::vector<bf16> x(1000);
  launch({2, 1, 1}, 256, 0, [&] { fill_bf16(x.data(), (long long)x.size(), 5u); });
  float lo = 1e9f, hi = -1e9f;
  for (auto v : x) lo = std::min(lo, bf16f(v)), hi = std::max(hi, bf16f(v));
  const bool ok = lo >= -1.f && hi <= 1.f && hi - lo > 1.5f;
  std::printf("%s fill_bf16: values in [%.3f, %.3f]\n", ok ? "ok  " : "FAIL", lo, hi);
  return ok;
}

int main() {
  // Lengths that are not multiples of 64 exercise the padding rows and the
  // partial last tiles; HKV < H exercises the GQA head mapping and dK/dV sums.
  const Case cases[] = {
      {1, 80, 2, 1, 64, 64},
      {2, 130, 1, 1, 128, 128},
      {1, 70, 2, 2, 192, 128},
      {1, 33, 1, 1, 192, 192},
  };
  bool ok = check_fill();
  for (const Case& c : cases) ok = run_case(c) && ok;
  std::printf(ok ? "PASS\n" : "FAIL\n");
  return ok ? 0 : 1;
}
