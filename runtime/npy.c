/* npy.c - placeholder. */
#include "runtime/npy.h"
