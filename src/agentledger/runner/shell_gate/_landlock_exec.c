/* landlock_exec.py in C, for start-up: `_landlock_exec PLACE... -- COMMAND [ARG...]`.
 *
 * Closes every file outside the PLACEs to writing (opening for writing, making, removing,
 * linking or renaming into another directory, truncating) with Landlock, then becomes
 * COMMAND. Same rights, same exit codes and messages as landlock_exec.py, which the sandbox
 * runs instead when this is not built (`make scan`). Linux only. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CREATE_RULESET 444
#define ADD_RULE 445
#define RESTRICT_SELF 446

struct ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct path_beneath {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

static int refuse(const char *what) {
    fprintf(stderr, "agentledger: Landlock refused to restrict the command: [Errno %d] %s: %s\n",
            errno, strerror(errno), what);
    return 126;
}

int main(int argc, char **argv) {
    int split = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            split = i;
            break;
        }
    }
    if (split == 0 || split == argc - 1) {
        fputs("usage: landlock_exec.py PLACE... -- COMMAND [ARG...]\n", stderr);
        return 2;
    }
    long abi = syscall(CREATE_RULESET, NULL, 0, 1UL);
    if (abi < 0) abi = 0;
    if (abi > 0) {
        struct ruleset_attr attr = {0};
        size_t size = sizeof(uint64_t);
        attr.handled_access_fs = (1ULL << 1) | (1ULL << 4) | (1ULL << 5) | (0x7FULL << 6);
        if (abi >= 2) attr.handled_access_fs |= 1ULL << 13;
        if (abi >= 3) attr.handled_access_fs |= 1ULL << 14;
        if (abi >= 6) {
            attr.scoped = 1 | 2;
            size = sizeof attr;
        }
        int ruleset = (int)syscall(CREATE_RULESET, &attr, size, 0UL);
        if (ruleset < 0) return refuse("landlock_create_ruleset");
        for (int i = 1; i < split; i++) {
            struct path_beneath rule = {attr.handled_access_fs, -1};
            rule.parent_fd = open(argv[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (rule.parent_fd < 0) return refuse(argv[i]);
            if (syscall(ADD_RULE, ruleset, 1, &rule, 0UL) != 0) return refuse(argv[i]);
            close(rule.parent_fd);
        }
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return refuse("prctl");
        if (syscall(RESTRICT_SELF, ruleset, 0UL) != 0) return refuse("landlock_restrict_self");
        close(ruleset);
    } else {
        const char *required = getenv("AGENTLEDGER_REQUIRE_LANDLOCK");
        if (required && strcmp(required, "1") == 0) {
            fputs("agentledger: this kernel has no Landlock and AGENTLEDGER_REQUIRE_LANDLOCK=1: "
                  "nothing was run\n", stderr);
            return 126;
        }
    }
    execvp(argv[split + 1], argv + split + 1);
    int missing = errno == ENOENT;
    fprintf(stderr, "agentledger: cannot run %s: %s\n", argv[split + 1], strerror(errno));
    return missing ? 127 : 126;
}
