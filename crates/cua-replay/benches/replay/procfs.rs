//! What the bench reads of processes from `/proc`: the browser's process family, its resident
//! memory and the CPU time its threads used.

use std::collections::BTreeMap;

/// One process: its parent and resident bytes.
struct Process {
    parent: u32,
    resident: u64,
}

fn processes() -> BTreeMap<u32, Process> {
    let mut all = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let mut process = Process {
            parent: 0,
            resident: 0,
        };
        for line in status.lines() {
            if let Some(ppid) = line.strip_prefix("PPid:") {
                process.parent = ppid.trim().parse().unwrap_or(0);
            }
            if let Some(kb) = line.strip_prefix("VmRSS:") {
                let kb: u64 = kb
                    .trim()
                    .trim_end_matches(" kB")
                    .trim()
                    .parse()
                    .unwrap_or(0);
                process.resident = kb * 1024;
            }
        }
        all.insert(pid, process);
    }
    all
}

/// The given processes and every descendant of theirs that is alive now.
pub(crate) fn family(roots: &[u32]) -> Vec<u32> {
    let all = processes();
    all.keys()
        .copied()
        .filter(|&pid| descends(&all, pid, roots))
        .collect()
}

fn descends(all: &BTreeMap<u32, Process>, mut pid: u32, roots: &[u32]) -> bool {
    for _ in 0..64 {
        if roots.contains(&pid) {
            return true;
        }
        match all.get(&pid) {
            Some(process) if process.parent > 1 => pid = process.parent,
            _ => return false,
        }
    }
    false
}

/// Resident memory of this process and every descendant of the given browser processes.
pub(crate) fn resident_bytes(browsers: &[u32]) -> u64 {
    let all = processes();
    let mut roots = browsers.to_vec();
    roots.push(std::process::id());
    all.iter()
        .filter(|(pid, _)| descends(&all, **pid, &roots))
        .map(|(_, process)| process.resident)
        .sum()
}

/// Nanoseconds of CPU the threads of these processes have used (`/proc/<pid>/task/*/schedstat`,
/// whose first field is the time on a CPU). A thread that ended is no longer counted, so a
/// difference is taken over processes that live through it.
pub(crate) fn cpu_ns(pids: &[u32]) -> u64 {
    let mut total = 0;
    for pid in pids {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
        for task in tasks.into_iter().flatten().flatten() {
            let Ok(schedstat) = std::fs::read_to_string(task.path().join("schedstat")) else {
                continue;
            };
            total += schedstat
                .split_whitespace()
                .next()
                .and_then(|ns| ns.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    total
}
