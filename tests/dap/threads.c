/* threads: three threads, each a few SFrame-covered calls deep, stopped at
 * once by a trap in the main thread. Built by test_dap.py (with
 * -Wa,--gsframe, then a copy without .eh_frame) to check the stackTrace of
 * every thread.
 *   main -> main_level_1 -> main_level_2 -> (waits until both workers are
 *   blocked in pause()) -> int3
 *   worker -> worker_level_1 -> worker_level_2 -> pause(), twice.
 * The main thread traps only when each worker is inside the pause system
 * call (/proc/self/task/TID/syscall), so both stops see the same stacks. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOINLINE __attribute__((noipa, used))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
#define WORKERS 2

static volatile pid_t tids[WORKERS];

NOINLINE void worker_level_2(int i) {
  tids[i] = (pid_t)syscall(SYS_gettid);
  for (;;) pause();
}

NOINLINE void worker_level_1(int i) {
  worker_level_2(i);
  KEEP_FRAME();
}

static void *worker(void *arg) {
  worker_level_1((int)(long)arg);
  return NULL;
}

/* Whether thread `tid` is blocked in pause() (x86-64 system call 34). */
static int in_pause(pid_t tid) {
  char path[64], buf[64] = {0};
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int ok = fgets(buf, sizeof buf, f) && strncmp(buf, "34 ", 3) == 0;
  fclose(f);
  return ok;
}

NOINLINE void main_level_2(void) {
  for (int i = 0; i < WORKERS; i++)
    while (!tids[i] || !in_pause(tids[i])) usleep(1000);
  __asm__ volatile("int3" ::: "memory");
}

NOINLINE void main_level_1(void) {
  main_level_2();
  KEEP_FRAME();
}

int main(void) {
  pthread_t t[WORKERS];
  for (long i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  main_level_1();
  KEEP_FRAME();
  return 0;
}
