/* Integration fixture: "JIT-compiled" code, a spin loop in an anonymous executable mapping that
 * only /tmp/perf-<pid>.map can name. Prints "ready <pid> <code address>" once running. */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
    unsigned char *code =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED)
        return 1;
    code[0] = 0xeb; /* jmp . */
    code[1] = 0xfe;
    printf("ready %d %lx\n", (int)getpid(), (unsigned long)code);
    fflush(stdout);
    ((void (*)(void))code)();
    return 0;
}
