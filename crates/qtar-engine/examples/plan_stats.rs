//! Plans a tree and reports its size and memory: entries, heap bytes of the
//! plan, bytes per entry (with and without names), and the process's peak RSS.
//!
//! `cargo run --release -p qtar-engine --example plan_stats -- DIR [disk|inode|name|none]`
//! (`QTAR_WORKERS` and `QTAR_DEPTH` override the metadata pass's threads and batches in flight)

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let root = args.next().expect("usage: plan_stats DIR [ORDER]");
    let order = match args.next().as_deref() {
        None | Some("disk") => qtar_engine::Order::Disk,
        Some("inode") => qtar_engine::Order::Inode,
        Some("name") => qtar_engine::Order::Name,
        Some("none") => qtar_engine::Order::None,
        Some(o) => panic!("unknown order {o}"),
    };
    let rss0 = peak_rss_kib();
    let t = std::time::Instant::now();
    let mut walk = qtar_engine::Walk::new().root(&root).order(order);
    if let Some(w) = std::env::var("QTAR_WORKERS").ok().and_then(|v| v.parse().ok()) {
        walk = walk.workers(w);
    }
    if let Some(d) = std::env::var("QTAR_DEPTH").ok().and_then(|v| v.parse().ok()) {
        walk = walk.queue_depth(d);
    }
    let plan = walk.plan().expect("plan");
    let secs = t.elapsed().as_secs_f64();
    let n = plan.len().max(1);
    let name_bytes: usize = plan.entries().map(|e| e.file_name().len()).sum();
    let heap = plan.heap_bytes();
    println!("entries            {}", plan.len());
    println!("errors             {}", plan.errors().len());
    println!("order used         {}", plan.order_used());
    println!("plan heap bytes    {heap}");
    println!("name bytes         {name_bytes}");
    println!("bytes/entry        {:.1} (of which names {:.1})", heap as f64 / n as f64, name_bytes as f64 / n as f64);
    println!("bytes/entry - names {:.1}", (heap - name_bytes) as f64 / n as f64);
    println!("peak RSS KiB       {} (before plan {rss0})", peak_rss_kib());
    println!("peak RSS bytes/entry {:.1}", (peak_rss_kib() - rss0) as f64 * 1024.0 / n as f64);
    println!("metadata pass s    {secs:.2}");
    if let Some(p) = plan.prefetch_stats() {
        println!("prefetch           {p:?}");
    }
}
