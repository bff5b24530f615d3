// SPDX-License-Identifier: MIT
// Two threads that reach the same call site, each with its own stack: the
// main thread calls call_through(stop_here) (a breakpoint stops it there),
// the worker call_through(pause), and waits in libc, whose frames GDB's own
// unwinders take. Built by run_thread_tests.py with `-Wa,--gsframe`.
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

static volatile int worker_waiting;
volatile int calls;

__attribute__((noinline)) void stop_here(void) {
    __asm__ volatile("" ::: "memory");
}

// The call site both threads return to: not a tail call (calls++ follows).
__attribute__((noinline)) void call_through(void (*fn)(void)) {
    fn();
    calls++;
}

__attribute__((noinline)) static void* worker(void* arg) {
    (void)arg;
    worker_waiting = 1;
    // pause() itself, so that the worker's frame 0 is libc's and its frame 1
    // is call_through's call site (pause's int result is not used).
    call_through((void (*)(void))pause);
    return NULL;
}

__attribute__((noinline)) static void main_side(void) {
    call_through(stop_here);
}

int main(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    while (!worker_waiting)
        usleep(1000);
    usleep(200000); // the worker is in pause() by now
    main_side();
    return calls == 1 ? 0 : 2;
}
