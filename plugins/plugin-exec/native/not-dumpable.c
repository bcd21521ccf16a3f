/*
 * tkgate-not-dumpable.node: loading it makes the process that loads it (the gateway) not dumpable
 * (prctl PR_SET_DUMPABLE 0). Linux then gives the process's /proc/<pid> files to root: a command of an exec
 * endpoint, running as the gateway's user, can no longer read the gateway's environment through
 * /proc/<pid>/environ, nor its memory, nor attach a debugger to it. It also means no core dump.
 *
 * A Node-API module with nothing to export: Node calls napi_register_module_v1 when it loads the file, and
 * that is the whole of it, so no Node header is needed to build it (the two types are opaque pointers).
 * The flag lasts until the process calls execve; it is not inherited by the spawn helpers, which exec.
 */
#include <sys/prctl.h>

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;

napi_value napi_register_module_v1(napi_env env, napi_value exports);

napi_value napi_register_module_v1(napi_env env, napi_value exports)
{
	(void)env;
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	return exports;
}
