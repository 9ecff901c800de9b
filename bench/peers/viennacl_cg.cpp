// viennacl_cg.cpp: ViennaCL 1.7.1's OpenCL CG as a peer for clsolve's timings.
// Builds the same 7-point (or 27-point) Poisson matrix clsolve generates
// (natural ordering, Dirichlet boundary, b = A*1), runs a fixed number of CG
// iterations (tolerance unreachable), and prints one JSON line with the
// milliseconds per iteration (best of --repeat runs after a warm-up).
//   g++ -O3 -std=c++11 bench/peers/viennacl_cg.cpp -lOpenCL -o /tmp/viennacl_cg
//   /tmp/viennacl_cg N [ITERS] [REPEAT] [7|27]
#define VIENNACL_WITH_OPENCL
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <viennacl/compressed_matrix.hpp>
#include <viennacl/linalg/cg.hpp>
#include <viennacl/linalg/prod.hpp>
#include <viennacl/ocl/backend.hpp>
#include <viennacl/vector.hpp>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 64;
    int iters = argc > 2 ? atoi(argv[2]) : 200;
    int repeat = argc > 3 ? atoi(argv[3]) : 3;
    int stencil = argc > 4 ? atoi(argv[4]) : 7;
    long N = n * n * n;
    std::vector<unsigned int> rowptr(N + 1), col;
    std::vector<double> val;
    col.reserve(N * stencil);
    val.reserve(N * stencil);
    for (long z = 0; z < n; z++)
        for (long y = 0; y < n; y++)
            for (long x = 0; x < n; x++) {
                long row = (z * n + y) * n + x;
                for (int dz = -1; dz <= 1; dz++)
                    for (int dy = -1; dy <= 1; dy++)
                        for (int dx = -1; dx <= 1; dx++) {
                            int manh = abs(dx) + abs(dy) + abs(dz);
                            if (stencil == 7 && manh > 1)
                                continue;
                            long xx = x + dx, yy = y + dy, zz = z + dz;
                            if (xx < 0 || yy < 0 || zz < 0 || xx >= n || yy >= n || zz >= n)
                                continue;
                            col.push_back((unsigned)((zz * n + yy) * n + xx));
                            val.push_back(manh == 0 ? (stencil == 7 ? 6.0 : 26.0) : -1.0);
                        }
                rowptr[row + 1] = (unsigned)col.size();
            }
    viennacl::compressed_matrix<double> A(N, N);
    A.set(&rowptr[0], &col[0], &val[0], N, N, col.size());
    viennacl::vector<double> ones = viennacl::scalar_vector<double>(N, 1.0);
    viennacl::vector<double> b = viennacl::linalg::prod(A, ones);
    viennacl::linalg::cg_tag warm(1e-300, 5);
    viennacl::vector<double> x = viennacl::linalg::solve(A, b, warm);
    viennacl::backend::finish();
    double best = 1e30;
    long its = 0;
    for (int r = 0; r < repeat; r++) {
        viennacl::linalg::cg_tag tag(1e-300, iters);
        viennacl::backend::finish();
        auto t0 = std::chrono::steady_clock::now();
        x = viennacl::linalg::solve(A, b, tag);
        viennacl::backend::finish();
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        its = tag.iters();
        double ms = 1e3 * s / (double)(its ? its : 1);
        if (ms < best)
            best = ms;
    }
    std::printf("{\"peer\": \"viennacl-1.7.1-opencl-cg\", \"device\": \"%s\", \"n\": %ld, \"rows\": %ld, "
                "\"nnz\": %zu, \"iterations\": %ld, \"ms_per_iteration\": %.5f}\n",
                viennacl::ocl::current_device().name().c_str(), n, N, col.size(), its, best);
    return 0;
}
