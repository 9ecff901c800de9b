/*
 * replay_main.c: a plain main() for the fuzz targets, so the regression
 * corpus runs with any C compiler (gcc in CI) and without libFuzzer.
 *
 *   replay_TARGET FILE_OR_DIR...
 *
 * Each file (a directory: each regular file in it, sorted by name) is read
 * whole and passed once to LLVMFuzzerTestOneInput, exactly as libFuzzer
 * would replay it. A target reports a finding by crashing (abort, or a
 * sanitizer when the build has them), so a clean exit means every input
 * passed. The file name is printed before each input so that a crash names
 * its input. Exit codes: 0 all passed, 2 usage or unreadable input.
 */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A slow input is a finding too (libFuzzer's -timeout): each input gets
 * REPLAY_TIMEOUT seconds (default 5; every corpus input takes milliseconds,
 * even under the sanitizers). */
static void on_alarm(int sig)
{
    static const char msg[] = "replay: TIMEOUT: the input named last took too long\n";
    (void)sig;
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    abort();
}

static unsigned timeout_s = 5;

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 2;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            fprintf(stderr, "%s: out of memory\n", path);
            return 2;
        }
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        cap *= 2;
        buf = realloc(buf, cap);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        fprintf(stderr, "%s: read error\n", path);
        return 2;
    }
    /* an exact-size copy, as libFuzzer passes it: ASan sees any overread */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return 2;
    }
    memcpy(exact, buf, len);
    free(buf);
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, len); /* names a crashing input */
    alarm(timeout_s);
    LLVMFuzzerTestOneInput(exact, len);
    alarm(0);
    free(exact);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int n = 0, rc = 0;
    const char *t = getenv("REPLAY_TIMEOUT");
    if (t && atoi(t) > 0)
        timeout_s = (unsigned)atoi(t);
    signal(SIGALRM, on_alarm);
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    for (int a = 1; a < argc; a++) {
        struct stat st;
        if (stat(argv[a], &st) != 0) {
            perror(argv[a]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[a]))
                return 2;
            n++;
            continue;
        }
        DIR *d = opendir(argv[a]);
        if (!d) {
            perror(argv[a]);
            return 2;
        }
        char **names = NULL;
        size_t cnt = 0, cap = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            if (cnt == cap) {
                cap = cap ? 2 * cap : 64;
                names = realloc(names, cap * sizeof *names);
                if (!names)
                    return 2;
            }
            size_t l = strlen(argv[a]) + strlen(e->d_name) + 2;
            names[cnt] = malloc(l);
            if (!names[cnt])
                return 2;
            snprintf(names[cnt], l, "%s/%s", argv[a], e->d_name);
            cnt++;
        }
        closedir(d);
        if (cnt)
            qsort(names, cnt, sizeof *names, by_name);
        for (size_t k = 0; k < cnt; k++) {
            struct stat fs;
            if (stat(names[k], &fs) == 0 && S_ISREG(fs.st_mode)) {
                if (run_file(names[k]))
                    rc = 2;
                n++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("%s: %d inputs passed\n", argv[0], n);
    return rc;
}
