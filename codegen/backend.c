/* backend.c - the registry of the backends this build has (backend.h).
 * A backend's table lives in its own folder (codegen/llvm/backend.c);
 * listing it here is all it takes for the driver to find it by name. */
#include "codegen/backend.h"

#include <string.h>

extern const cg_backend cg_llvm_backend;
#ifdef ICC_HAVE_NVRTC
extern const cg_backend cg_cuda_backend;
#endif

const cg_backend *const cg_backends[] = {
    &cg_llvm_backend,
#ifdef ICC_HAVE_NVRTC
    &cg_cuda_backend,
#endif
    NULL,
};

const cg_backend *cg_backend_find(const char *name)
{
    for (int i = 0; name && cg_backends[i]; i++)
        if (!strcmp(cg_backends[i]->name, name))
            return cg_backends[i];
    return NULL;
}
