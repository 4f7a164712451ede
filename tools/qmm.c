/* qmm: the command-line tool. It uses the public API of libqmm only. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "qmm.h"

typedef struct tool_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} tool_command;

static const tool_command commands[] = {
    {"run", cmd_run, "quantize a default weight in every format, multiply it, print speed and error"},
    {"bench", cmd_bench, "time matmul per format, shape and M against dense bf16 and the bandwidth"},
    {"quantize", cmd_quantize, "quantize the Linear weights of a safetensors checkpoint (nvfp4, mxfp4, fp8)"},
    {"inspect", cmd_inspect, "list the tensors of a checkpoint with dtypes, shapes, sizes and formats"},
    {"verify", cmd_verify, "compare a quantized checkpoint with its original: per-tensor error and SQNR"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: qmm <command> [options]\n\n"
               "Weight-only low-precision matrix multiplication (NVFP4, MXFP4, FP8 weights).\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'qmm <command> --help' describes a command's options.\n"
               "options: --help, --version\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("qmm %s\n", qmm_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "qmm: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
