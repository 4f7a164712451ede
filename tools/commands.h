/* The qmm tool's commands. Each takes the arguments after its name and returns the exit code. */
#ifndef QMM_TOOLS_COMMANDS_H
#define QMM_TOOLS_COMMANDS_H

int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_verify(int argc, char **argv);

#endif
