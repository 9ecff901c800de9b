/*
 * test_mm_range.c: the spans of a ranged read (matrices/mm_range.h) on
 * fresh random coordinate files (seeded from the clock; CLSOLVE_TEST_SEED
 * replays). Each file mixes what makes a cut hard: CRLF and LF lines,
 * comment and blank lines among the entries (one of them 100 KB long, so
 * that cuts fall inside it), runs of spaces and tabs, and sometimes no
 * final newline. For every part count from 1 to 9:
 *  - the spans tile the entry section: the first starts at its first byte,
 *    each ends where the next starts, the last at the end of the file, and
 *    each starts at a line start;
 *  - the spans' lines add up to the section's, and a prefix sum of them is
 *    the first line of each span;
 *  - the spans parsed one by one (mm_read_span) give the whole-file read's
 *    entries in file order, and the sum is the declared count;
 * then a bad line planted at a random place is reported by the span that
 * holds it, at its true line number, with the whole-file read's message,
 * and a declared count one short is reported at the line of the entry
 * beyond it (mm_span_fail_long) as the whole-file read reports it.
 */
#define _GNU_SOURCE /* mkdtemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "matrices/mm.h"
#include "matrices/mm_range.h"

static char dir[256];

/* A file of n x n with k entries, in a random mix of line forms. bad_at >= 0:
 * entry line bad_at reads "i x v" instead. declared: the size line's count.
 * Returns the 1-based line of the bad entry (or of entry `declared`, the
 * first beyond a short declaration), 0 if none. */
static int64_t write_file(const char *path, int64_t n, int64_t k, int64_t bad_at, int64_t declared,
                          int crlf_all, int final_nl)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return 0;
    const char *eol = crlf_all ? "\r\n" : "\n";
    int64_t line = 1, mark = 0;
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general%s%% made by test_mm_range%s", eol,
            eol);
    line += 2;
    fprintf(f, "%lld %lld %lld%s", (long long)n, (long long)n, (long long)declared, eol);
    line++;
    for (int64_t e = 0; e < k; e++) {
        unsigned r = (unsigned)(check_rand() % 40);
        if (r == 0) {
            fprintf(f, "%% a comment among the entries%s", eol);
            line++;
        } else if (r == 1) {
            fprintf(f, "  \t %s", eol);
            line++;
        } else if (r == 2 && check_rand() % 50 == 0) {
            fputc('%', f);
            for (int c = 0; c < 100000; c++)
                fputc('a' + c % 26, f);
            fputs(eol, f);
            line++;
        }
        const char *le = crlf_all || check_rand() % 3 == 0 ? "\r\n" : "\n";
        if (e == k - 1 && !final_nl)
            le = "";
        long long i = (long long)(check_rand() % (uint64_t)n) + 1;
        long long j = (long long)(check_rand() % (uint64_t)n) + 1;
        if (e == bad_at) {
            fprintf(f, "%lld x 1.5%s", i, le);
            mark = line;
        } else {
            fprintf(f, "%s%lld%s%lld %.17g%s", check_rand() % 4 ? "" : "  ", i,
                    check_rand() % 5 ? " " : "\t ", j, 2.0 * check_uniform() - 1.0, le);
        }
        if (e == declared && bad_at < 0)
            mark = line;
        line++;
    }
    fclose(f);
    return mark;
}

/* The spans of nparts parts, parsed one after another as ranks would. */
static void check_spans(const char *path, int nparts, const coo_matrix *whole)
{
    mm_header h;
    mm_where w;
    cls_error e;
    CHECK(mm_read_header_at(path, &h, &w, &e) == CLS_OK);
    CHECK(w.plain && !w.binary && mm_range_ok(&h, &w));
    int64_t prev_e = w.data_off, line = h.size_line + 1, got = 0;
    int ordered = 1;
    FILE *f = fopen(path, "rb");
    for (int p = 0; p < nparts; p++) {
        int64_t b, en, lines;
        CHECK(mm_range_span(path, &w, p, nparts, &b, &en, &e) == CLS_OK);
        CHECK_MSG(b == prev_e, "part %d of %d starts at %lld, the last ended at %lld", p, nparts,
                  (long long)b, (long long)prev_e);
        if (b > w.data_off && b < w.file_size && f) { /* a line start */
            fseek(f, (long)(b - 1), SEEK_SET);
            CHECK_MSG(fgetc(f) == '\n', "part %d of %d starts inside a line", p, nparts);
        }
        CHECK(mm_range_lines(path, b, en, &lines, &e) == CLS_OK);
        coo_matrix C;
        mm_span_result res;
        int rc = mm_read_span(path, NULL, &h, b, en, line, &C, &res, &e);
        CHECK_MSG(rc == CLS_OK, "part %d of %d: %s", p, nparts, e.msg);
        CHECK_MSG(res.next_line == line + lines, "part %d of %d: next line %lld, counted %lld", p,
                  nparts, (long long)res.next_line, (long long)(line + lines));
        for (int64_t q = 0; rc == CLS_OK && q < C.nnz && got + q < whole->nnz; q++)
            if (C.row[q] != whole->row[got + q] || C.col[q] != whole->col[got + q] ||
                C.val[q] != whole->val[got + q])
                ordered = 0;
        got += rc == CLS_OK ? C.nnz : 0;
        coo_free(&C);
        line += lines;
        prev_e = en;
    }
    if (f)
        fclose(f);
    CHECK_MSG(prev_e == w.file_size, "%d parts end at %lld of %lld", nparts, (long long)prev_e,
              (long long)w.file_size);
    CHECK_MSG(got == whole->nnz && ordered, "%d parts: %lld entries (%s order), whole read %lld",
              nparts, (long long)got, ordered ? "file" : "another", (long long)whole->nnz);
}

/* The whole-file entries in file order: a second read with one thread. */
static void whole_entries(const char *path, coo_matrix *C)
{
    mm_header h;
    mm_where w;
    cls_error e;
    CHECK(mm_read_header_at(path, &h, &w, &e) == CLS_OK);
    mm_span_result res;
    mm_read_options one = {.threads = 1};
    CHECK(mm_read_span(path, &one, &h, w.data_off, w.file_size, h.size_line + 1, C, &res, &e) ==
          CLS_OK);
}

/* A bad line, or one entry too many: the span holding it says so at its line. */
static void check_error(const char *path, int nparts, const char *want)
{
    mm_header h;
    mm_where w;
    cls_error e;
    CHECK(mm_read_header_at(path, &h, &w, &e) == CLS_OK);
    int64_t line = h.size_line + 1, before = 0;
    char got[sizeof e.msg] = "";
    for (int p = 0; p < nparts && !got[0]; p++) {
        int64_t b, en, lines;
        CHECK(mm_range_span(path, &w, p, nparts, &b, &en, &e) == CLS_OK);
        CHECK(mm_range_lines(path, b, en, &lines, &e) == CLS_OK);
        coo_matrix C;
        mm_span_result res;
        int rc = mm_read_span(path, NULL, &h, b, en, line, &C, &res, &e);
        /* as dinput_ranged.c: the declared count passed first, then the line */
        if (before <= h.entries && before + res.entries > h.entries)
            rc = mm_span_fail_long(path, &h, b, en, line, h.entries - before, &e);
        if (rc)
            snprintf(got, sizeof got, "%s", e.msg);
        coo_free(&C);
        before += res.entries;
        line += lines;
    }
    CHECK_MSG(strcmp(got, want) == 0, "%d parts: '%s', the whole-file read: '%s'", nparts, got,
              want);
}

int main(void)
{
    check_seed("test_mm_range");
    snprintf(dir, sizeof dir, "/tmp/test_mm_range.XXXXXX");
    if (!mkdtemp(dir))
        CHECK_SKIP("no temporary directory");
    char path[512];
    snprintf(path, sizeof path, "%s/a.mtx", dir);
    for (int round = 0; round < 6; round++) {
        int64_t n = 5 + (int64_t)(check_rand() % 300), k = 1 + (int64_t)(check_rand() % 3000);
        int crlf = round % 3 == 1, final_nl = round % 2 == 0;
        write_file(path, n, k, -1, k, crlf, final_nl);
        coo_matrix whole;
        whole_entries(path, &whole);
        /* the whole-file read agrees on the count (mm_read_csr sums duplicates) */
        csr_matrix A;
        mm_read_stats st;
        cls_error e;
        CHECK_MSG(mm_read_csr(path, NULL, &A, NULL, &st, &e) == CLS_OK, "%s", e.msg);
        CHECK(st.stored_entries == whole.nnz && whole.nnz == k);
        csr_free(&A);
        for (int parts = 1; parts <= 9; parts++)
            check_spans(path, parts, &whole);
        coo_free(&whole);

        /* a bad line: its true number from the span that holds it */
        int64_t bad = (int64_t)(check_rand() % (uint64_t)k);
        int64_t bad_line = write_file(path, n, k, bad, k, crlf, final_nl);
        CHECK_MSG(mm_read_csr(path, NULL, &A, NULL, NULL, &e) != CLS_OK && e.line == bad_line,
                  "whole read: line %lld, planted at %lld", (long long)e.line, (long long)bad_line);
        char want[sizeof e.msg];
        snprintf(want, sizeof want, "%s", e.msg);
        for (int parts = 1; parts <= 9; parts++)
            check_error(path, parts, want);

        /* one entry more than declared */
        if (k > 1) {
            int64_t over_line = write_file(path, n, k, -1, k - 1, crlf, final_nl);
            CHECK(mm_read_csr(path, NULL, &A, NULL, NULL, &e) != CLS_OK && e.line == over_line);
            snprintf(want, sizeof want, "%s", e.msg);
            for (int parts = 1; parts <= 9; parts++)
                check_error(path, parts, want);
        }
    }
    /* what is not read in ranges */
    mm_header h;
    mm_where w;
    cls_error e;
    FILE *f = fopen(path, "w");
    fprintf(f, "%%%%MatrixMarket matrix array real general\n2 1\n1\n2\n");
    fclose(f);
    CHECK(mm_read_header_at(path, &h, &w, &e) == CLS_OK && w.plain && !mm_range_ok(&h, &w));
    f = fopen(path, "w");
    fprintf(f, "%%%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n");
    fclose(f);
    CHECK(mm_read_header_at(path, &h, &w, &e) == CLS_OK && !mm_range_ok(&h, &w));
    remove(path);
    remove(dir);
    return check_done("test_mm_range");
}
