/* sig_entry: a signal interrupts the program exactly on a function's first
 * byte. before() raises SIGUSR1 with a raw tgkill syscall (SYS_tgkill is 234
 * on x86-64) as its last instruction and falls through into at_entry(), so
 * the kernel delivers the signal with the PC on at_entry's first byte, while
 * the byte before it is in before(). The SIGUSR1 handler then faults
 * (SIGSEGV), which stops the program.
 * The CLI and LLDB tests build it static (x86-64), then give it an SFrame v3
 * section converted from its CFI (`sfunwind convert`), so that glibc's
 * __restore_rt has a signal-frame FDE. */
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

__asm__(".text\n"
        ".globl before\n.type before,@function\nbefore:\n.cfi_startproc\n"
        "mov $234, %eax\nsyscall\n.cfi_endproc\n.size before,.-before\n"
        ".globl at_entry\n.type at_entry,@function\nat_entry:\n.cfi_startproc\n"
        "ret\n.cfi_endproc\n.size at_entry,.-at_entry\n");
void before(long pid, long tid, long sig);

volatile int* volatile null_ptr;

__attribute__((noinline)) static void on_usr1(int sig) {
    *null_ptr = sig;
}

int main(void) {
    signal(SIGUSR1, on_usr1);
    before(getpid(), syscall(SYS_gettid), SIGUSR1);
    return 0;
}
