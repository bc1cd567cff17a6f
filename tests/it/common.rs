//! Shared helpers: running the tools, generating hard trees, comparing trees.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use qtar_testfs::{LoopFs, is_root, need_root, need_tool, run, scratch};

pub fn qtar() -> Command {
    Command::new(env!("CARGO_BIN_EXE_qtar"))
}

pub fn out(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

/// A command's stderr, with very long lines (deep paths) shortened for messages.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(|l| if l.len() > 300 { format!("{}…{}\n", &l[..150], &l[l.len() - 100..]) } else { format!("{l}\n") })
        .collect()
}

fn p(root: &Path, rel: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(rel))
}

/// Writes `rel` below `root`, creating directories one at a time relative to
/// their parent, so paths longer than `PATH_MAX` work.
pub fn write(root: &Path, rel: &[u8], data: &[u8]) {
    use rustix::fs::{Mode, OFlags};
    let comps: Vec<&[u8]> = rel.split(|&b| b == b'/').collect();
    let mut dir = rustix::fs::open(root, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
    for c in &comps[..comps.len() - 1] {
        match rustix::fs::mkdirat(&dir, *c, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => panic!("mkdir {}: {e}", String::from_utf8_lossy(c)),
        }
        dir = rustix::fs::openat(&dir, *c, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
    }
    let f = rustix::fs::openat(
        &dir,
        comps[comps.len() - 1],
        OFlags::CREATE | OFlags::WRONLY | OFlags::TRUNC,
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
    std::io::Write::write_all(&mut std::fs::File::from(f), data).unwrap();
}

/// Sets mtime (and atime) of `rel` without following symlinks.
pub fn set_mtime(root: &Path, rel: &[u8], sec: i64, nsec: u32) {
    let t = rustix::fs::Timespec { tv_sec: sec, tv_nsec: nsec as _ };
    let ts = rustix::fs::Timestamps { last_access: t, last_modification: t };
    rustix::fs::utimensat(rustix::fs::CWD, p(root, rel), &ts, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).unwrap();
}

/// What a hard tree holds; some parts need root or a file system feature.
#[derive(Clone, Copy)]
pub struct TreeSpec {
    pub devices: bool,
    pub xattrs: bool,
    pub big_sparse: bool,
    pub odd_owners: bool,
    pub very_long_path: bool,
}

/// A tree with the cases an archiver gets wrong: long and odd names, links,
/// special files, sparse and big files, pre-1970 and sub-second times.
pub fn hard_tree(root: &Path, spec: TreeSpec) {
    std::fs::create_dir_all(root).unwrap();
    let mut rng = 0x9e3779b97f4a7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    // Many small and medium files across directories, written interleaved.
    for i in 0..300u64 {
        let size = match i % 7 {
            0 => 0,
            1 => 1,
            2 => 511,
            3 => 512,
            4 => 4096,
            5 => 10_000 + (next() % 50_000) as usize,
            _ => 200_000 + (next() % 300_000) as usize,
        };
        let data: Vec<u8> = (0..size).map(|j| (j as u64 ^ i.wrapping_mul(2654435761)) as u8).collect();
        write(root, format!("dir{}/sub{}/file{i}", i % 9, i % 4).as_bytes(), &data);
    }
    // Names at the format limits: 100, 155 and 255 bytes, and a deep path.
    for len in [99usize, 100, 101, 155, 156, 255] {
        write(root, &vec![b'n'; len], b"limit\n");
    }
    let mut deep = b"deep".to_vec();
    let levels = if spec.very_long_path { 17 } else { 3 };
    for i in 0..levels {
        deep.push(b'/');
        deep.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, 250));
    }
    deep.extend_from_slice(b"/leaf");
    write(root, &deep, b"deep file\n");
    if spec.very_long_path {
        assert!(deep.len() > 4096, "a path longer than PATH_MAX");
    }
    // Prefix split: a 154-byte directory and a 99-byte name (ustar's limits).
    let mut split = vec![b'p'; 154];
    split.push(b'/');
    split.extend(vec![b'q'; 99]);
    write(root, &split, b"split\n");
    // Non-UTF-8 bytes, a newline, spaces, a backslash, a leading dash.
    for name in [&b"caf\xe9"[..], b"new\nline", b"sp ace", b"back\\slash", b"-dash", b"\xff\xfe"] {
        write(root, &[b"odd/", name].concat(), name);
    }
    // Symlinks (relative, absolute, dangling, to a directory) and hard links.
    std::os::unix::fs::symlink("../dir1", root.join("odd/to-dir")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("odd/abs")).unwrap();
    std::os::unix::fs::symlink("nowhere", root.join("odd/dangling")).unwrap();
    std::os::unix::fs::symlink(OsStr::from_bytes(&[b'L'; 200]), root.join("odd/long-target")).unwrap();
    std::fs::hard_link(root.join("dir1/sub1/file1"), root.join("odd/hard1")).unwrap();
    std::fs::hard_link(root.join("dir1/sub1/file1"), root.join("hard2")).unwrap();
    std::fs::hard_link(p(root, &vec![b'n'; 255]), root.join("odd/hard-long")).unwrap();
    // GNU tar delays absolute and `..` symlinks to the end of extraction; the
    // directory holding one must still be restored after it. Created in this
    // order so that inode order would interleave another directory.
    std::fs::create_dir_all(root.join("delay/sub")).unwrap();
    std::fs::create_dir_all(root.join("delay2")).unwrap();
    run(Command::new("mkfifo").arg(root.join("delay/fifo")));
    run(Command::new("mkfifo").arg(root.join("delay2/fifo")));
    std::os::unix::fs::symlink("/etc/hostname", root.join("delay/abs")).unwrap();
    std::os::unix::fs::symlink("../delay2", root.join("delay/sub/up")).unwrap();
    // FIFO, and devices when root.
    run(Command::new("mkfifo").arg(root.join("odd/fifo")));
    if spec.devices {
        run(Command::new("mknod").arg(root.join("odd/null")).args(["c", "1", "3"]));
        run(Command::new("mknod").arg(root.join("odd/blk")).args(["b", "7", "200"]));
    }
    // Sparse files: a small one, and one of 8 GiB with data at both ends.
    {
        let f = std::fs::File::create(root.join("sparse-small")).unwrap();
        f.set_len(3 << 20).unwrap();
        std::os::unix::fs::FileExt::write_at(&f, b"middle", 1 << 20).unwrap();
    }
    if spec.big_sparse {
        let f = std::fs::File::create(root.join("sparse-8g")).unwrap();
        f.set_len(8 << 30).unwrap();
        std::os::unix::fs::FileExt::write_at(&f, b"start", 0).unwrap();
        std::os::unix::fs::FileExt::write_at(&f, b"end", (8 << 30) + 4096).unwrap();
    }
    // Modes, including setuid and an unreadable-by-others directory.
    write(root, b"modes/suid", b"x");
    std::fs::set_permissions(root.join("modes/suid"), std::fs::Permissions::from_mode(0o4755)).unwrap();
    write(root, b"modes/private/secret", b"y");
    std::fs::set_permissions(root.join("modes/private"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::create_dir(root.join("modes/empty-ro")).unwrap();
    std::fs::set_permissions(root.join("modes/empty-ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
    if spec.odd_owners {
        rustix::fs::chownat(
            rustix::fs::CWD,
            root.join("modes/suid"),
            Some(rustix::fs::Uid::from_raw(3_000_000)),
            Some(rustix::fs::Gid::from_raw(2_097_152)),
            rustix::fs::AtFlags::empty(),
        )
        .unwrap();
        // chown clears setuid; set it again.
        std::fs::set_permissions(root.join("modes/suid"), std::fs::Permissions::from_mode(0o4755)).unwrap();
        rustix::fs::chownat(
            rustix::fs::CWD,
            root.join("odd/sp ace"),
            Some(rustix::fs::Uid::from_raw(1234)),
            Some(rustix::fs::Gid::from_raw(5678)),
            rustix::fs::AtFlags::empty(),
        )
        .unwrap();
    }
    if spec.xattrs {
        xattr::set(root.join("odd/hard1"), "user.color", b"blue").unwrap();
        xattr::set(root.join("dir2"), "user.empty", b"").unwrap();
        write(root, b"odd/with-xattr", b"x");
        xattr::set(root.join("odd/with-xattr"), "user.k", b"\x00\x01binary").unwrap();
    }
    // Times last: pre-1970, sub-second, far future; directories too.
    set_mtime(root, b"odd/sp ace", -86400 * 365 * 20 - 7, 0);
    set_mtime(root, b"odd/new\nline", 1_000_000_000, 123_456_789);
    set_mtime(root, b"dir3/sub3/file3", 4_102_444_800, 5);
    set_mtime(root, b"odd/abs", 1_234_567_890, 0);
    write(root, b"odd/neg-frac", b"before 1970, with a fraction");
    set_mtime(root, b"odd/neg-frac", -1, 500_000_000);
    // Every directory gets an old time, so an extractor that touches a
    // directory after restoring it is caught whatever the clock says.
    let mut dirs: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_dir())
        .map(|e| e.into_path())
        .collect();
    dirs.sort();
    for (i, d) in dirs.iter().enumerate() {
        let rel = d.strip_prefix(root).unwrap().as_os_str().as_bytes();
        set_mtime(root, if rel.is_empty() { b"." } else { rel }, 1_500_000_000 + i as i64 * 3601, 250_000_000);
    }
    set_mtime(root, b"modes", -3600, 0);
    set_mtime(root, b"dir0", 86_400, 0);
    run(&mut Command::new("sync"));
}

/// Differences between two trees as `rsync -naiHAX --checksum` reports them
/// (empty when equal). `modify_window` is in seconds: 1 for formats that keep
/// whole seconds only. `skip` are paths relative to the roots left out.
pub fn rsync_diff(a: &Path, b: &Path, modify_window: u32, skip: &[&[u8]]) -> String {
    let mut cmd = Command::new("rsync");
    cmd.args(["-naiHAX", "--checksum", "--delete", &format!("--modify-window={modify_window}")]);
    for s in skip {
        let mut arg = b"--exclude=/".to_vec();
        arg.extend_from_slice(s);
        cmd.arg(OsStr::from_bytes(&arg));
    }
    cmd.arg(format!("{}/", a.display())).arg(format!("{}/", b.display()));
    let o = out(&mut cmd);
    assert!(o.status.success(), "rsync failed: {}", stderr(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `bsdtar --format=mtree` of a tree (sorted lines), with times cut to whole
/// seconds when `whole_seconds`.
pub fn mtree(dir: &Path, whole_seconds: bool, skip: &[&[u8]]) -> Vec<String> {
    let mut cmd = Command::new("bsdtar");
    cmd.current_dir(dir).args([
        "--format=mtree",
        "--options",
        "mtree:type,mode,uid,gid,size,time,link,sha256,!nlink,!flags",
    ]);
    for s in skip {
        let mut arg = b"--exclude=./".to_vec();
        arg.extend_from_slice(s);
        cmd.arg(OsStr::from_bytes(&arg));
    }
    let o = out(cmd.args(["-cf", "-", "."]));
    assert!(o.status.success(), "bsdtar mtree failed: {}", stderr(&o));
    let mut lines: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            l.split(' ')
                .map(|f| match f.strip_prefix("time=") {
                    Some(t) if whole_seconds => format!("time={}", t.split('.').next().unwrap()),
                    _ => f.to_string(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    lines.sort();
    lines
}

pub fn assert_same_trees(a: &Path, b: &Path, whole_seconds: bool, what: &str) {
    assert_same_trees_except(a, b, whole_seconds, what, &[]);
}

/// [`assert_same_trees`], leaving out the paths in `skip` (relative to the roots).
pub fn assert_same_trees_except(a: &Path, b: &Path, whole_seconds: bool, what: &str, skip: &[&[u8]]) {
    let d = rsync_diff(a, b, if whole_seconds { 1 } else { 0 }, skip);
    assert!(d.trim().is_empty(), "{what}: rsync -naiHAX --checksum reports differences:\n{d}");
    let (ma, mb) = (mtree(a, whole_seconds, skip), mtree(b, whole_seconds, skip));
    if ma != mb {
        let only_a: Vec<_> = ma.iter().filter(|l| !mb.contains(l)).take(10).collect();
        let only_b: Vec<_> = mb.iter().filter(|l| !ma.contains(l)).take(10).collect();
        panic!("{what}: mtree differs\nsource only: {only_a:#?}\nresult only: {only_b:#?}");
    }
}
