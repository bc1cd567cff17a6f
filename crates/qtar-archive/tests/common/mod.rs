//! Shared helpers for the integration tests: building trees, reading
//! metadata like GNU tar does, running GNU tar and bsdtar.
#![allow(dead_code)]

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use qtar_archive::{AppendOutcome, ArchiveWriter, EntryKind, EntryMeta, WriteOptions};

/// True when running as root; otherwise prints why a privileged part is
/// skipped, and panics under CI=true.
pub fn require_root(what: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{what}: needs root, and CI=true forbids skipping");
    }
    eprintln!("SKIP {what}: needs root");
    false
}

/// A fresh directory under /tmp (ext4: xattrs, SEEK_HOLE, mknod work).
pub fn tmpdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("qtar-archive-test-").tempdir_in("/tmp").expect("tempdir in /tmp")
}

fn id_names(file: &str) -> HashMap<u64, Vec<u8>> {
    let text = std::fs::read(file).unwrap_or_default();
    let mut m = HashMap::new();
    for line in text.split(|&c| c == b'\n') {
        let f: Vec<&[u8]> = line.split(|&c| c == b':').collect();
        if f.len() > 2 {
            if let Some(id) = std::str::from_utf8(f[2]).ok().and_then(|s| s.parse().ok()) {
                m.entry(id).or_insert_with(|| f[0].to_vec());
            }
        }
    }
    m
}

/// Reads members from disk like GNU tar: lstat, names from passwd/group,
/// hard links detected by (dev, ino), xattrs when asked.
pub struct Collector {
    users: HashMap<u64, Vec<u8>>,
    groups: HashMap<u64, Vec<u8>>,
    seen: HashMap<(u64, u64), Vec<u8>>,
    pub xattrs: bool,
}

impl Collector {
    pub fn new() -> Self {
        Collector {
            users: id_names("/etc/passwd"),
            groups: id_names("/etc/group"),
            seen: HashMap::new(),
            xattrs: false,
        }
    }

    pub fn meta(&mut self, root: &Path, name: &[u8]) -> EntryMeta {
        let path = root.join(OsStr::from_bytes(name));
        let md = std::fs::symlink_metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut kind = EntryMeta::kind_of(&md);
        if let EntryKind::Symlink { target } = &mut kind {
            *target = std::fs::read_link(&path).unwrap().into_os_string().into_encoded_bytes();
        }
        if !md.is_dir() && md.nlink() > 1 {
            let key = (md.dev(), md.ino());
            if let Some(first) = self.seen.get(&key) {
                kind = EntryKind::HardLink { target: first.clone() };
            } else {
                self.seen.insert(key, name.to_vec());
            }
        }
        let mut m = EntryMeta::from_std(&md, kind);
        m.uname = self.users.get(&m.uid).cloned();
        m.gname = self.groups.get(&m.gid).cloned();
        if self.xattrs {
            m.xattrs = read_xattrs(&path);
        }
        m
    }
}

pub fn read_xattrs(path: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut names = vec![0u8; 65536];
    let n = match rustix::fs::llistxattr(path, &mut names) {
        Ok(n) => n,
        Err(_) => return Vec::new(),
    };
    let mut out = Vec::new();
    for name in names[..n].split(|&c| c == 0).filter(|s| !s.is_empty()) {
        if !name.starts_with(b"user.") {
            continue;
        }
        let mut val = vec![0u8; 65536];
        let cname = std::ffi::CString::new(name).unwrap();
        let vn = rustix::fs::lgetxattr(path, cname.as_c_str(), &mut val).unwrap();
        out.push((name.to_vec(), val[..vn].to_vec()));
    }
    out
}

/// Archives `names` (relative to `root`, in this order) with our writer.
pub fn ours(root: &Path, names: &[Vec<u8>], opts: WriteOptions) -> (Vec<u8>, Vec<AppendOutcome>) {
    let mut c = Collector::new();
    c.xattrs = opts.xattrs;
    let mut w = ArchiveWriter::new(Vec::new(), opts);
    let mut outcomes = Vec::new();
    for n in names {
        let meta = c.meta(root, n);
        let mut f = (meta.kind == EntryKind::File).then(|| File::open(root.join(OsStr::from_bytes(n))).unwrap());
        let o = w.append(n, &meta, f.as_mut()).unwrap_or_else(|e| panic!("append {}: {e}", String::from_utf8_lossy(n)));
        outcomes.push(o);
    }
    (w.finish().unwrap(), outcomes)
}

/// Runs GNU tar to archive `names` without recursion.
pub fn gnu(root: &Path, names: &[Vec<u8>], args: &[&str]) -> Vec<u8> {
    let out = Command::new("tar")
        .args(args)
        .arg("-cf")
        .arg("-")
        .arg("-C")
        .arg(root)
        .arg("--no-recursion")
        .arg("--")
        .args(names.iter().map(|n| OsStr::from_bytes(n)))
        .output()
        .expect("run GNU tar");
    assert!(out.status.success(), "GNU tar failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// Runs a command, panicking with its stderr on failure; returns stdout.
pub fn run(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

pub fn sh(script: &str) -> Vec<u8> {
    run(Command::new("sh").arg("-ec").arg(script))
}

/// Sets atime of everything under `root` into the future so that reading
/// files (relatime) does not change it between our run and GNU tar's.
pub fn freeze_atimes(root: &Path) {
    sh(&format!("find '{}' -exec touch -h -a -d '2035-01-01 00:00:00' {{}} +", root.display()));
}

/// Compares two archives block by block, printing the first differing block.
pub fn assert_same_archive(ours: &[u8], theirs: &[u8], what: &str) {
    if ours == theirs {
        return;
    }
    let blocks = ours.len().max(theirs.len()) / 512;
    for i in 0..blocks {
        let a = ours.get(i * 512..(i + 1) * 512);
        let b = theirs.get(i * 512..(i + 1) * 512);
        if a != b {
            let show = |x: Option<&[u8]>| x.map(|x| String::from_utf8_lossy(x).replace('\0', ".")).unwrap_or_default();
            let diffs: Vec<usize> = (0..512).filter(|&k| a.map(|a| a[k]) != b.map(|b| b[k])).collect();
            panic!("{what}: block {i} differs at byte offsets {diffs:?}\nours:   {}\ntheirs: {}", show(a), show(b));
        }
    }
    panic!("{what}: lengths differ: ours {} theirs {}", ours.len(), theirs.len());
}

pub fn bytes(p: &Path) -> Vec<u8> {
    p.as_os_str().as_bytes().to_vec()
}

pub fn path_of(root: &Path, name: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(name))
}

/// Builds the comparison tree; returns member names in archive order
/// (directories first, then files scattered across them, like disk order).
pub fn build_tree(root: &Path, root_ok: bool) -> Vec<Vec<u8>> {
    let n = |c: char, len: usize| c.to_string().repeat(len);
    let mut names: Vec<Vec<u8>> = Vec::new();
    sh(&format!(
        "cd '{}'; mkdir d d/sub '{dir99}'; printf hello > d/f; : > empty; head -c 512 /dev/zero | tr '\\0' a > b512;
         head -c 1024 /dev/urandom > b1024; head -c 777 /dev/urandom > '{dir99}/{n100}'; ln -s d/f sl; ln -s '{n150}' sl_long;
         ln b1024 d/hard; printf x > '{n155}'; printf y > '{n255}'; printf z > 'd/{n101}'; mkfifo fifo;
         printf 'a\\nb' > \"$(printf 'new\\nline')\"; printf q > \"$(printf 'bin\\377\\001')\";
         touch -d '1960-01-01 12:00:00' b512; touch -d '2024-01-02 03:04:05.123456789' d/f; touch -d '@1700000000' empty",
        root.display(),
        dir99 = n('D', 99),
        n100 = n('a', 100),
        n150 = n('t', 150),
        n155 = n('c', 155),
        n255 = n('e', 255),
        n101 = n('g', 101)
    ));
    for s in ["d", "d/sub", &n('D', 99)] {
        names.push(s.as_bytes().to_vec());
    }
    for s in [
        "b1024".to_string(),
        "d/f".into(),
        "empty".into(),
        "b512".into(),
        format!("{}/{}", n('D', 99), n('a', 100)),
        "sl".into(),
        "sl_long".into(),
        "d/hard".into(),
        n('c', 155),
        n('e', 255),
        format!("d/{}", n('g', 101)),
        "fifo".into(),
        "new\nline".into(),
    ] {
        names.push(s.into_bytes());
    }
    names.push(b"bin\xff\x01".to_vec());
    if root_ok {
        sh(&format!(
            "cd '{}'; mknod chr c 1 3; printf big > bigid; chown 3000000:2500000 bigid; touch -d '@1700000000.5' bigid",
            root.display()
        ));
        names.push(b"chr".to_vec());
        names.push(b"bigid".to_vec());
    }
    freeze_atimes(root);
    names
}

/// Data regions of a file from SEEK_DATA/SEEK_HOLE: where the holes are.
pub fn data_map(p: &Path) -> Vec<(u64, u64)> {
    use rustix::fs::SeekFrom;
    let f = File::open(p).unwrap();
    let size = f.metadata().unwrap().len();
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < size {
        let Ok(d) = rustix::fs::seek(&f, SeekFrom::Data(pos)) else {
            break;
        };
        let h = rustix::fs::seek(&f, SeekFrom::Hole(d)).unwrap();
        out.push((d, h));
        pos = h;
    }
    out
}
