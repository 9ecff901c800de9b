/*
 * cmd_gen.c: `clsolve gen KIND N -o A.mtx` writes a generated stencil matrix
 * (matrices/gen.h) in symmetric coordinate storage, half the size of the
 * general form; `--binary` (or an output named *.bin) in the binary CSR form
 * (matrices/csr_bin.h).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "common/timer.h"
#include "matrices/csr_bin.h"
#include "matrices/gen.h"
#include "matrices/mm.h"

int cmd_gen(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "gen"};
    const char *kind = NULL, *nstr = NULL, *out = NULL;
    int general = 0, binary = 0;
    while (a.i < argc) {
        if (cli_opt(&a, "-o", "--output", 1))
            out = a.value;
        else if (cli_opt(&a, "--general", NULL, 0))
            general = 1;
        else if (cli_opt(&a, "--binary", NULL, 0))
            binary = 1;
        else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("gen", "unknown option '%s'", argv[a.i]);
        else if (!kind)
            kind = argv[a.i++];
        else if (!nstr)
            nstr = argv[a.i++];
        else
            cli_usage_error("gen", "unexpected argument '%s'", argv[a.i]);
    }
    gen_kind k;
    if (!kind || gen_kind_parse(kind, &k) != 0)
        cli_usage_error("gen", "give a kind: poisson2d, poisson3d or poisson3d27");
    if (!nstr)
        cli_usage_error("gen", "give the grid size N");
    int64_t n = cli_int(&a, "N", nstr, 1);
    if (!out)
        cli_usage_error("gen", "give the output file with -o");

    csr_matrix A;
    cls_error err;
    double t0 = cls_now();
    int rc = gen_matrix(k, n, &A, &err);
    if (rc) {
        fprintf(stderr, "clsolve gen: %s\n", err.msg);
        return rc;
    }
    char comment[128];
    snprintf(comment, sizeof comment, "clsolve gen %s %lld", gen_kind_name(k), (long long)n);
    const size_t ol = strlen(out);
    if (ol > 4 && !strcmp(out + ol - 4, ".bin"))
        binary = 1;
    rc = binary ? csr_bin_write(out, &A, &err) : mm_write_csr(out, &A, !general, comment, &err);
    if (rc) {
        fprintf(stderr, "clsolve gen: %s\n", err.msg);
        csr_free(&A);
        return rc;
    }
    printf("%s: %s %lld, %lld rows, %lld nonzeros (%.2f s)\n", out, gen_kind_name(k),
           (long long)n, (long long)A.nrows, (long long)A.nnz, cls_now() - t0);
    csr_free(&A);
    return 0;
}
