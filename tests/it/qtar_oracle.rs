//! Archives made by qtar, extracted by GNU tar 1.34 and bsdtar, give back the
//! source tree: contents, modes, times, owners, links, holes, xattrs, specials.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use super::common::*;

fn roundtrip(fstype: &str, format: &str, extra: &[&str]) {
    if need_root(&format!("loop-mounted {fstype}"))
        || need_tool("bsdtar")
        || need_tool("rsync")
        || need_tool(&format!("mkfs.{fstype}"))
    {
        return;
    }
    let fs = LoopFs::new(fstype, 640);
    let src = fs.path().join("src");
    let xattrs = format != "gnu";
    hard_tree(&src, TreeSpec { devices: true, xattrs, big_sparse: true, odd_owners: true, very_long_path: false });
    let work = scratch();
    let archive = work.path().join("a.tar");
    let o = out(qtar()
        .current_dir(fs.path())
        .args(["-c", "-S", &format!("--format={format}"), "-f"])
        .arg(&archive)
        .args(extra)
        .arg("src"));
    assert!(o.status.success(), "qtar failed: {}", stderr(&o));
    // The 8 GiB sparse file costs almost nothing with -S.
    let size = std::fs::metadata(&archive).unwrap().len();
    assert!(size < 64 << 20, "archive is {size} bytes");

    let whole_seconds = format == "gnu";
    // The 8 GiB sparse file is checked on its own below, not hashed four times.
    const BIG: &[u8] = b"sparse-8g";
    let gnu = work.path().join("gnu");
    std::fs::create_dir(&gnu).unwrap();
    let mut x = Command::new("tar");
    x.args(["-x", "-p", "--same-owner", "-f"]).arg(&archive).arg("-C").arg(&gnu);
    if xattrs {
        x.args(["--xattrs", "--xattrs-include=*"]);
    }
    let o = out(&mut x);
    assert!(o.status.success(), "GNU tar -x failed: {}", stderr(&o));
    assert_same_trees_except(&src, &gnu.join("src"), whole_seconds, &format!("{fstype}/{format}: GNU tar"), &[BIG]);

    let bsd = work.path().join("bsd");
    std::fs::create_dir(&bsd).unwrap();
    let o = out(Command::new("bsdtar").args(["-x", "-p", "--numeric-owner", "-f"]).arg(&archive).arg("-C").arg(&bsd));
    // bsdtar 3.6 cannot extract non-UTF-8 names from pax archives (GNU tar's
    // own pax archives of them included: hdrcharset=BINARY); it skips them.
    let mut skip: Vec<&[u8]> = vec![BIG];
    if format != "gnu" {
        let err = stderr(&o);
        assert!(
            err.lines()
                .all(|l| l.contains("Pathname can't be converted from UTF-8") || l.contains("Error exit delayed")),
            "bsdtar -x: {err}"
        );
        skip.extend([&b"odd/caf\xe9"[..], b"odd/\xff\xfe", b"odd/neg-frac"]);
    } else {
        assert!(o.status.success(), "bsdtar -x failed: {}", stderr(&o));
    }
    // bsdtar 3.6 also misreads negative fractional pax times ("mtime=-0.5",
    // which GNU tar writes too, becomes +0.5): odd/neg-frac is skipped above.
    assert_same_trees_except(&src, &bsd.join("src"), whole_seconds, &format!("{fstype}/{format}: bsdtar"), &skip);

    // Holes survive: the extracted 8 GiB file has its size, its data, and
    // occupies almost nothing.
    for d in [&gnu, &bsd] {
        let f = std::fs::File::open(d.join("src/sparse-8g")).unwrap();
        let m = f.metadata().unwrap();
        assert_eq!(m.len(), (8 << 30) + 4099);
        assert!(std::os::unix::fs::MetadataExt::blocks(&m) < 1024, "holes lost in {}", d.display());
        let mut buf = [0u8; 5];
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf, 0).unwrap();
        assert_eq!(&buf, b"start");
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf[..3], (8 << 30) + 4096).unwrap();
        assert_eq!(&buf[..3], b"end");
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf, 1 << 30).unwrap();
        assert_eq!(buf, [0; 5]);
    }
}

#[test]
fn ext4_gnu_format() {
    roundtrip("ext4", "gnu", &[]);
}

#[test]
fn ext4_pax_format_with_xattrs() {
    roundtrip("ext4", "pax", &["--xattrs"]);
}

#[test]
fn xfs_posix_format_with_xattrs() {
    roundtrip("xfs", "posix", &["--xattrs"]);
}

#[test]
fn btrfs_gnu_format() {
    roundtrip("btrfs", "gnu", &[]);
}

/// With `--sort=name` and the gnu format, qtar's archive is byte-for-byte
/// GNU tar's: same members, same order, same headers, same padding.
#[test]
fn sort_name_is_byte_identical_to_gnu_tar() {
    let work = scratch();
    let src = work.path().join("src");
    hard_tree(
        &src,
        TreeSpec { devices: is_root(), xattrs: false, big_sparse: false, odd_owners: is_root(), very_long_path: false },
    );
    let a = work.path().join("q.tar");
    let b = work.path().join("g.tar");
    for (cmd, file) in [(qtar(), &a), (Command::new("tar"), &b)] {
        let mut cmd = cmd;
        let o = out(cmd.current_dir(work.path()).args(["--sort=name", "-cf"]).arg(file).arg("src"));
        assert!(o.status.success(), "{cmd:?}: {}", stderr(&o));
    }
    let (qa, ga) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    if qa != ga {
        let lq = out(Command::new("tar").arg("-tvf").arg(&a));
        let lg = out(Command::new("tar").arg("-tvf").arg(&b));
        let first = qa.iter().zip(&ga).position(|(x, y)| x != y);
        panic!(
            "archives differ (sizes {} and {}, first difference at byte {first:?})\nqtar:\n{}\nGNU tar:\n{}",
            qa.len(),
            ga.len(),
            String::from_utf8_lossy(&lq.stdout),
            String::from_utf8_lossy(&lg.stdout)
        );
    }
}

/// Every order gives the same set of members, and GNU tar extracts each.
#[test]
fn every_sort_order_extracts_the_same_tree() {
    let work = scratch();
    let src = work.path().join("src");
    hard_tree(
        &src,
        TreeSpec { devices: is_root(), xattrs: false, big_sparse: false, odd_owners: false, very_long_path: false },
    );
    for sort in ["disk", "inode", "name", "none"] {
        let a = work.path().join(format!("{sort}.tar"));
        let o = out(qtar().current_dir(work.path()).arg(format!("--sort={sort}")).arg("-cf").arg(&a).arg("src"));
        assert!(o.status.success(), "{sort}: {}", stderr(&o));
        let dest = work.path().join(format!("x-{sort}"));
        std::fs::create_dir(&dest).unwrap();
        let o = out(Command::new("tar").arg("-xpf").arg(&a).arg("-C").arg(&dest));
        assert!(o.status.success(), "{sort}: {}", stderr(&o));
        assert_same_trees(&src, &dest.join("src"), true, &format!("--sort={sort}"));
    }
}

/// Paths longer than PATH_MAX: qtar archives them; bsdtar extracts them (GNU
/// tar 1.34 cannot create such paths, but lists the names).
#[test]
fn paths_longer_than_path_max() {
    let work = scratch();
    let src = work.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    let mut deep = b"deep".to_vec();
    for i in 0..17u8 {
        deep.push(b'/');
        deep.extend(std::iter::repeat_n(b'a' + i, 250));
        write(&src, &[&deep[..], b"/file"].concat(), &[i; 3000]);
    }
    std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&vec![b'x'; 4000]), src.join("long-target")).unwrap();
    for format in ["gnu", "pax"] {
        let a = work.path().join(format!("{format}.tar"));
        let o = out(qtar().current_dir(work.path()).arg(format!("--format={format}")).arg("-cf").arg(&a).arg("src"));
        assert!(o.status.success(), "{format}: {}", stderr(&o));
        let longest = list(&a).into_iter().map(|n| n.len()).max().unwrap();
        assert!(longest > 4096, "{format}: longest member name {longest}");
        let dest = work.path().join(format!("x-{format}"));
        std::fs::create_dir(&dest).unwrap();
        let o = out(Command::new("bsdtar").arg("-xpf").arg(&a).arg("-C").arg(&dest));
        // bsdtar 3.6 extracts the files but cannot restore the times of
        // directories deeper than PATH_MAX; nothing else may fail.
        let err = stderr(&o);
        assert!(
            err.lines().all(|l| l.contains("Can't restore time") || l.contains("Error exit delayed")),
            "{format}: {err}"
        );
        // rsync cannot walk paths beyond PATH_MAX; bsdtar's mtree can.
        let no_dir_times = |v: Vec<String>| -> Vec<String> {
            v.into_iter()
                .map(|l| {
                    if l.contains("type=dir") {
                        l.split(' ').filter(|f| !f.starts_with("time=")).collect::<Vec<_>>().join(" ")
                    } else {
                        l
                    }
                })
                .collect()
        };
        let (a, b) = (no_dir_times(mtree(&src, true, &[])), no_dir_times(mtree(&dest.join("src"), true, &[])));
        let diff: Vec<_> =
            a.iter().filter(|l| !b.contains(l)).chain(b.iter().filter(|l| !a.contains(l))).take(6).collect();
        assert!(diff.is_empty(), "long paths, {format}: {diff:?}");
    }
}

pub fn list(archive: &Path) -> Vec<String> {
    let o = out(Command::new("tar").arg("-tf").arg(archive));
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect()
}
