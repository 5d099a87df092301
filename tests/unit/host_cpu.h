/* host_cpu.h - what the tests expect of this machine's CPU, read from
 * /proc/cpuinfo (independently of the runtime's cpuid probe). */
#ifndef ICC_TEST_HOST_CPU_H
#define ICC_TEST_HOST_CPU_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Whether /proc/cpuinfo's flags line lists flag (as a whole word). */
static inline bool cpu_has(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char line[8192];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5))
            continue;
        for (char *tok = strtok(strchr(line, ':') + 1, " \n"); tok; tok = strtok(NULL, " \n"))
            if (!strcmp(tok, flag))
                found = true;
        break;
    }
    fclose(f);
    return found;
}

#endif
