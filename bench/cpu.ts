/** CPU accounting for the benchmarks (Linux /proc): what each process and the machine spent. */
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

/** CPU time of a process, all its threads, in ns: the sum of /proc/PID/task/TID/schedstat; null when unreadable. */
export function processCpuNs(pid: number): number | null {
  try {
    let total = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // The thread ended between the listing and the read.
      }
    }
    return total;
  } catch {
    return null;
  }
}

/** This process's CPU time in ns (the load generator). */
export function selfCpuNs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) * 1000;
}

/** Busy CPU time of the whole machine so far, in ns (all cores). */
export function machineBusyNs(): number {
  return os.cpus().reduce((sum, cpu) => sum + cpu.times.user + cpu.times.nice + cpu.times.sys + cpu.times.irq, 0) * 1e6;
}
