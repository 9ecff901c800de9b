/*
 * client_none.c: the client commands (submit, status, wait, fetch, cancel,
 * rm) in a build without libcurl (cmd_client.c and http_client.c need it):
 * each says so and exits 1. Install libcurl4-openssl-dev
 * (deploy/install-deps.sh) and configure again to have them.
 */
#include <stdio.h>

#include "cli.h"
#include "common/error.h"

static int client_none(const char *cmd)
{
    fprintf(stderr,
            "clsolve %s: this clsolve was built without libcurl, so it has no client commands "
            "(install libcurl4-openssl-dev and build again)\n",
            cmd);
    return CLS_EOTHER;
}

int cmd_submit(int argc, char **argv)
{
    return client_none("submit");
}
int cmd_status(int argc, char **argv)
{
    return client_none("status");
}
int cmd_wait(int argc, char **argv)
{
    return client_none("wait");
}
int cmd_fetch(int argc, char **argv)
{
    return client_none("fetch");
}
int cmd_cancel(int argc, char **argv)
{
    return client_none("cancel");
}
int cmd_rm(int argc, char **argv)
{
    return client_none("rm");
}
