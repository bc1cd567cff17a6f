//! The engine against real file systems, with walkdir, filefrag and debugfs as oracles.

use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use qtar_engine::{FileKind, Order, OrderUsed, Walk};
use qtar_testfs::{LoopFs, need_root, need_tool, run, scratch};

/// Files written round-robin across directories, so directory order and disk
/// order disagree; plus the special cases.
fn make_tree(root: &Path) {
    for d in 0..6 {
        std::fs::create_dir_all(root.join(format!("d{d}/sub"))).unwrap();
    }
    for i in 0..120 {
        let d = i % 6;
        let size = [1usize, 700, 4096, 5000, 70_000, 300_000][i % 6] + i;
        let data: Vec<u8> = (0..size).map(|j| (j * 31 + i) as u8).collect();
        let p = if i % 4 == 0 { root.join(format!("d{d}/sub/f{i}")) } else { root.join(format!("d{d}/f{i}")) };
        std::fs::write(&p, data).unwrap();
        if i % 10 == 0 {
            // Force allocation now, in this order.
            std::fs::File::open(&p).unwrap().sync_all().unwrap();
        }
    }
    std::fs::write(root.join("empty"), b"").unwrap();
    std::fs::hard_link(root.join("d1/f1"), root.join("d5/link-to-f1")).unwrap();
    std::fs::hard_link(root.join("d1/f1"), root.join("link-top")).unwrap();
    std::os::unix::fs::symlink("d0/f0", root.join("sym")).unwrap();
    std::os::unix::fs::symlink("/nonexistent", root.join("d2/dangling")).unwrap();
    run(Command::new("mkfifo").arg(root.join("fifo")));
    run(&mut Command::new("sync"));
}

fn walkdir_set(root: &Path) -> BTreeSet<Vec<u8>> {
    walkdir::WalkDir::new(root).into_iter().map(|e| e.unwrap().path().as_os_str().as_bytes().to_vec()).collect()
}

fn check_invariants(plan: &qtar_engine::Plan) {
    let mut seen_dir = false;
    let mut last_off = 0u64;
    let mut in_data = false;
    for e in plan.entries() {
        if let Some(t) = e.hard_link_target() {
            assert!(t.index() < e.index());
            assert_eq!(t.meta().ino, e.meta().ino);
        }
        if e.kind() == FileKind::Dir {
            seen_dir = true;
            continue;
        }
        assert!(!seen_dir, "directories come last: {e:?}");
        if let Some((_, off)) = e.physical_span() {
            if e.hard_link_target().is_none() {
                assert!(off >= last_off, "data by last extent: {e:?} at {off} after {last_off}");
                last_off = off;
                in_data = true;
            }
        } else {
            assert!(!in_data || e.hard_link_target().is_some(), "no-seek entries come before the data: {e:?}");
        }
    }
    // Every directory after all of its descendants.
    let pos: std::collections::HashMap<Vec<u8>, usize> = plan.entries().map(|e| (e.path_bytes(), e.index())).collect();
    for e in plan.entries() {
        let p = e.path();
        if let Some(parent) = p.parent() {
            if let Some(&pp) = pos.get(parent.as_os_str().as_bytes()) {
                assert!(pp > e.index(), "{} before its child {}", parent.display(), p.display());
            }
        }
    }
}

#[test]
fn plan_lists_what_walkdir_lists_in_every_order() {
    let dir = scratch();
    let root = dir.path().join("t");
    make_tree(&root);
    let want = walkdir_set(&root);
    for order in [Order::Disk, Order::Inode, Order::Name, Order::None] {
        let plan = Walk::new().root(&root).order(order).plan().unwrap();
        assert!(plan.errors().is_empty(), "{:?}", plan.errors());
        let got: BTreeSet<Vec<u8>> = plan.entries().map(|e| e.path_bytes()).collect();
        assert_eq!(got, want, "{order:?}");
        assert_eq!(plan.len(), want.len(), "no duplicates in {order:?}");
        let links = plan.entries().filter(|e| e.hard_link_target().is_some()).count();
        assert_eq!(links, 2, "two extra names of d1/f1 in {order:?}");
    }
}

#[test]
fn name_order_is_gnu_tar_sort_name() {
    let dir = scratch();
    let root = dir.path().join("t");
    make_tree(&root);
    let plan = Walk::new().root(&root).order(Order::Name).plan().unwrap();
    let got: Vec<Vec<u8>> = plan.entries().map(|e| e.path_bytes()).collect();
    // Depth-first with sorted siblings is walkdir with sort_by(file_name).
    let want: Vec<Vec<u8>> = walkdir::WalkDir::new(&root)
        .sort_by(|a, b| a.file_name().as_bytes().cmp(b.file_name().as_bytes()))
        .into_iter()
        .map(|e| e.unwrap().path().as_os_str().as_bytes().to_vec())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn reader_yields_every_file_with_its_contents() {
    let dir = scratch();
    let root = dir.path().join("t");
    make_tree(&root);
    let plan = Walk::new().root(&root).plan().unwrap();
    let mut n = 0;
    for item in plan.reader() {
        let item = item.unwrap();
        let e = item.entry;
        match item.file {
            Some(mut f) => {
                let mut got = Vec::new();
                std::io::Read::read_to_end(&mut f, &mut got).unwrap();
                assert_eq!(got, std::fs::read(e.path()).unwrap(), "{e:?}");
                n += 1;
            }
            None => assert!(!e.meta().is_file() || e.hard_link_target().is_some(), "{e:?}"),
        }
    }
    assert_eq!(n, 120 + 1, "120 files and the empty one, links not reopened");
}

#[test]
fn filter_prunes_before_stat() {
    let dir = scratch();
    let root = dir.path().join("t");
    make_tree(&root);
    let plan = Walk::new().root(&root).filter(|p, _| !p.ends_with(b"/sub")).plan().unwrap();
    assert!(plan.entries().all(|e| { !e.path_bytes().windows(5).any(|w| w == b"/sub/" || w == b"/sub") }));
    assert!(plan.len() > 50);
}

#[test]
fn disk_order_on_loop_ext4_matches_filefrag() {
    if need_root("loop-mounted ext4") || need_tool("filefrag") {
        return;
    }
    let fs = LoopFs::new("ext4", 256);
    let root = fs.path().join("t");
    make_tree(&root);
    let plan = Walk::new().root(&root).plan().unwrap();
    assert!(plan.errors().is_empty(), "{:?}", plan.errors());
    assert_eq!(plan.order_used(), OrderUsed::Physical);
    check_invariants(&plan);
    // FIEMAP's first physical offset agrees with filefrag's.
    let mut checked = 0;
    for e in plan.entries().filter(|e| e.physical_offset().is_some()).step_by(7) {
        let out = run(Command::new("filefrag").args(["-v", "-b512"]).arg(e.path()));
        let first =
            out.lines().find(|l| l.trim_start().starts_with("0:")).unwrap_or_else(|| panic!("no extent 0 in {out}"));
        let phys: u64 = first.split(':').nth(2).unwrap().trim().split("..").next().unwrap().trim().parse().unwrap();
        assert_eq!(e.physical_offset(), Some(phys * 512), "{e:?}: {out}");
        checked += 1;
    }
    assert!(checked > 5);
    // The same on a read-only, cold mount (the benchmark's setting).
    let a: Vec<_> = plan.entries().map(|e| e.path_bytes()).collect();
    drop(plan);
    let mut fs = fs;
    fs.remount("ro,noload");
    let plan2 = Walk::new().root(&root).plan().unwrap();
    let b: Vec<_> = plan2.entries().map(|e| e.path_bytes()).collect();
    assert!(
        a == b,
        "the plan is a function of the layout: {} of {} positions differ",
        a.iter().zip(&b).filter(|(x, y)| x != y).count(),
        a.len()
    );
}

#[test]
fn ext4_inode_map_matches_debugfs() {
    if need_root("reading an ext4 block device") || need_tool("debugfs") {
        return;
    }
    let fs = LoopFs::with_mkfs_args("ext4", 512, &["-N", "40000"]);
    let root = fs.path();
    for i in 0..50 {
        std::fs::create_dir(root.join(format!("d{i}"))).unwrap();
    }
    run(&mut Command::new("sync"));
    let st = std::fs::metadata(root).unwrap();
    let dev = qtar_sys::BlockDev { major: rustix::fs::major(st.dev()), minor: rustix::fs::minor(st.dev()) };
    let map = qtar_engine::layout::Ext4Map::probe(dev).unwrap();
    for i in (0..50).step_by(9) {
        let ino = std::fs::metadata(root.join(format!("d{i}"))).unwrap().ino();
        let out = run(Command::new("debugfs").args(["-R", &format!("imap <{ino}>")]).arg(fs.device()));
        // "Inode 12 is part of block group 0\n\tlocated at block 1090, offset 0x0b00"
        let line = out.lines().find(|l| l.contains("located at block")).unwrap();
        let block: u64 = line.split("block ").nth(1).unwrap().split(',').next().unwrap().trim().parse().unwrap();
        let off = u64::from_str_radix(line.split("0x").nth(1).unwrap().trim(), 16).unwrap();
        assert_eq!(map.inode_offset(ino), Some(block * 4096 + off), "inode {ino}: {out}");
    }
}

#[test]
fn tmpfs_falls_back_and_says_so() {
    if need_root("mounting tmpfs") {
        return;
    }
    let dir = scratch();
    let mnt = dir.path().join("m");
    std::fs::create_dir(&mnt).unwrap();
    run(Command::new("mount").args(["-t", "tmpfs", "none"]).arg(&mnt));
    struct Umount<'a>(&'a Path);
    impl Drop for Umount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _u = Umount(&mnt);
    make_tree(&mnt);
    let plan = Walk::new().root(&mnt).plan().unwrap();
    assert_eq!(plan.order_used(), OrderUsed::Discovery);
    assert_eq!(plan.entries().map(|e| e.path_bytes()).collect::<BTreeSet<_>>(), walkdir_set(&mnt));
}

/// A file with `n` separate extents: one block written every other block, so
/// holes split them, synced so they are allocated now.
fn fragmented(path: &Path, n: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::create(path).unwrap();
    for i in 0..n {
        f.write_all_at(&[i as u8 + 1; 4096], i * 8192).unwrap();
    }
    f.sync_all().unwrap();
}

fn debugfs_stat(dev: &str, ino: u64) -> String {
    run(Command::new("debugfs").args(["-R", &format!("stat <{ino}>")]).arg(dev))
}

#[test]
fn ext4_raw_inodes_match_debugfs_and_fiemap() {
    use qtar_engine::layout::{BlockMap, Ext4Map, parse_inode};
    use std::os::unix::fs::FileExt;
    if need_root("reading an ext4 block device") || need_tool("debugfs") || need_tool("dumpe2fs") {
        return;
    }
    let fs = LoopFs::with_mkfs_args("ext4", 256, &["-N", "20000", "-b", "4096"]);
    let root = fs.path();
    std::fs::create_dir(root.join("big")).unwrap();
    for i in 0..600 {
        std::fs::write(root.join(format!("big/file-with-a-longish-name-{i:05}")), b"x").unwrap();
    }
    std::fs::write(root.join("small"), vec![7u8; 50_000]).unwrap();
    std::fs::write(root.join("empty"), b"").unwrap();
    fragmented(&root.join("frag"), 12);
    run(&mut Command::new("sync"));
    let st = std::fs::metadata(root).unwrap();
    let dev = qtar_sys::BlockDev { major: rustix::fs::major(st.dev()), minor: rustix::fs::minor(st.dev()) };
    let map = Ext4Map::probe(dev).unwrap();
    let bdev = std::fs::File::open(fs.device()).unwrap();
    let raw = |ino: u64| {
        let mut b = vec![0u8; map.inode_size() as usize];
        bdev.read_exact_at(&mut b, map.inode_offset(ino).unwrap()).unwrap();
        parse_inode(&b).unwrap()
    };
    let ino = |name: &str| std::fs::metadata(root.join(name)).unwrap().ino();
    let bs = map.block_size();
    // Extents held in the inode: exactly what FIEMAP reports.
    for name in ["small", "big"] {
        let f = std::fs::File::open(root.join(name)).unwrap();
        let want: Vec<(u64, u64)> =
            qtar_sys::fiemap(&f).unwrap().iter().map(|e| (e.physical / bs, e.length / bs)).collect();
        assert_eq!(raw(ino(name)).map, BlockMap::Extents(want), "{name}");
    }
    assert_eq!(raw(ino("empty")).map, BlockMap::Extents(vec![]));
    // An extent tree out of the inode: the leaf debugfs names as ETB0.
    let out = debugfs_stat(fs.device(), ino("frag"));
    let leaf: u64 = out
        .split("(ETB0):")
        .nth(1)
        .expect("frag has an extent block")
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(raw(ino("frag")).map, BlockMap::Index(vec![leaf]), "{out}");
    // The used part of each group's inode table, as dumpe2fs counts it.
    let dump = run(Command::new("dumpe2fs").arg(fs.device()));
    let unused: Vec<u64> = dump
        .lines()
        .filter_map(|l| l.split(" unused inodes").next().filter(|_| l.contains(" unused inodes")))
        .map(|l| l.rsplit(", ").next().unwrap().trim().parse().unwrap())
        .collect();
    let per_group: u64 =
        dump.lines().find_map(|l| l.strip_prefix("Inodes per group:")).unwrap().trim().parse().unwrap();
    assert_eq!(unused.len(), map.groups());
    for (g, u) in unused.iter().enumerate() {
        let used = map.used_inode_table(g).map_or(0, |(first, _, len)| {
            assert_eq!(first, g as u64 * per_group + 1);
            len / map.inode_size()
        });
        assert_eq!(used, per_group - u, "group {g}");
    }
}

#[test]
fn prefetched_plan_equals_plain_plan() {
    if need_root("reading an ext4 block device") {
        return;
    }
    let mut fs = LoopFs::with_mkfs_args("ext4", 256, &["-b", "4096"]);
    let root = fs.path().join("t");
    make_tree(&root);
    for i in 0..8 {
        fragmented(&root.join(format!("d{}/frag{i}", i % 6)), 6 + i);
    }
    fs.remount("ro,noload");
    let root = fs.path().join("t");
    type Spans = BTreeSet<(Vec<u8>, Option<(u64, u64)>)>;
    let spans =
        |plan: &qtar_engine::Plan| -> Spans { plan.entries().map(|e| (e.path_bytes(), e.physical_span())).collect() };
    let plain = Walk::new().root(&root).exact_layout(false).plan().unwrap();
    assert!(plain.prefetch_stats().is_none());
    run(&mut Command::new("sync"));
    std::fs::write("/proc/sys/vm/drop_caches", "3").unwrap();
    let fast = Walk::new().root(&root).plan().unwrap();
    let st = fast.prefetch_stats().expect("the device is readable as root");
    assert!(st.groups >= 1 && st.inode_table_bytes > 0 && st.dir_bytes > 0, "{st:?}");
    assert!(st.leaf_bytes >= 8 * 4096, "eight files have extent blocks: {st:?}");
    assert!(fast.errors().is_empty() && plain.errors().is_empty());
    assert_eq!(spans(&fast), spans(&plain));
    check_invariants(&fast);
    let order = |p: &qtar_engine::Plan| p.entries().map(|e| e.path_bytes()).collect::<Vec<_>>();
    assert_eq!(order(&fast), order(&plain), "the same layout gives the same order");
}
