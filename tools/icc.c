/* icc.c - the driver (placeholder until the CLI lands). */
#include <stdio.h>
int main(void) { puts("icc"); return 0; }
