//! The benchmark runner: builds clean and aged ext4 images of a tree, runs
//! each peer cold on each image while tracing the loop device, prices the
//! traces on the disk model and writes a run directory:
//! `commands.txt`, `versions.txt`, `raw.csv`, `summary.md`, SVG plots and
//! `freefrag-<image>.txt`. Raw traces go, gzipped, to the cache (outside
//! git).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::age::{self, AgeParams, TreeItem};
use crate::layout::{self, LayoutStats};
use crate::model::{self, DiskParams};
use crate::sys::{self, Loop, Mount};
use crate::tracefs::{self, CaptureOptions};
use crate::tree;

/// Which tree and image sizes to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// A seeded synthetic tree (~20k files, ~300 MB) on 1 GiB images.
    Quick,
    /// Debian's linux-source-6.12 tree (~90k files) on 6 GiB images.
    Full,
}

impl Profile {
    fn name(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Full => "full",
        }
    }
    fn image_bytes(self) -> u64 {
        match self {
            Profile::Quick => 1 << 30,
            Profile::Full => 6 << 30,
        }
    }
    fn churn_factor(self) -> f64 {
        2.0
    }
}

/// Settings of one run.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Tree and sizes.
    pub profile: Profile,
    /// Cache dir for trees, images and traces (outside git).
    pub cache: PathBuf,
    /// Where run directories go (`benches/runs`).
    pub runs: PathBuf,
    /// Cold runs of each tool on each image.
    pub repeats: u32,
    /// Seed of the synthetic tree and of aging.
    pub seed: u64,
    /// A qtar binary to benchmark, if any.
    pub qtar: Option<PathBuf>,
    /// Also build and measure an aged image.
    pub aged: bool,
    /// Only run tools whose name contains one of these (all when empty).
    pub only: Vec<String>,
}

/// A tool under test: a shell command run in the mount point, with the
/// tree at `tree` and a scratch destination in `$DST`.
#[derive(Debug, Clone)]
pub struct Tool {
    /// Short name.
    pub name: String,
    /// The `sh -c` command line.
    pub cmd: String,
    /// Needs a fresh `$DST`.
    pub writes_dst: bool,
}

/// The peers of LAB.md, plus qtar's three modes when `qtar` is given.
/// Returns the tools and notes on skipped ones.
pub fn tools(qtar: Option<&Path>) -> (Vec<Tool>, Vec<String>) {
    let t = |name: &str, cmd: &str, writes_dst| Tool { name: name.into(), cmd: cmd.into(), writes_dst };
    let mut v = vec![
        t("gnu-tar", "tar -cf - tree | cat >/dev/null", false),
        t("gnu-tar-inode", "tar --sort=inode -cf - tree | cat >/dev/null", false),
        t("bsdtar", "bsdtar -cf - tree | cat >/dev/null", false),
        t("cp-a", "cp -a tree \"$DST/\"", true),
        t("rsync-a", "rsync -a tree \"$DST/\"", true),
    ];
    let mut notes = Vec::new();
    match qtar {
        Some(q) if q.is_file() => {
            // The tools run in the image's mount point: a relative path would
            // not resolve there.
            let q = q.canonicalize().unwrap_or_else(|_| q.to_path_buf());
            for mode in ["none", "inode", "disk"] {
                v.push(t(
                    &format!("qtar-{mode}"),
                    &format!("'{}' --sort={mode} -cf - tree | cat >/dev/null", q.display()),
                    false,
                ));
            }
            // Ablations of the disk order: one metadata thread (the default
            // is four when the metadata prefetch runs); no reads of the block
            // device (no metadata prefetch), with one thread (the default
            // then) and with four; the non-rotational defaults (eight
            // threads, a deeper prefetch window).
            for (name, env) in [
                ("qtar-disk-1thread", "QTAR_META_WORKERS=1"),
                ("qtar-disk-nodev", "QTAR_DEVICE_LAYOUT=0"),
                ("qtar-disk-nodev-4threads", "QTAR_DEVICE_LAYOUT=0 QTAR_META_WORKERS=4"),
                ("qtar-disk-flashmode", "QTAR_ROTATIONAL=0"),
            ] {
                v.push(t(name, &format!("{env} '{}' --sort=disk -cf - tree | cat >/dev/null", q.display()), false));
            }
        }
        Some(q) => notes.push(format!("qtar skipped: $QTAR={} is not a file", q.display())),
        None => notes.push("qtar skipped: $QTAR is not set".into()),
    }
    (v, notes)
}

/// One measured row of `raw.csv`.
#[derive(Debug, Clone)]
pub struct Row {
    /// Tool name.
    pub tool: String,
    /// Image name (`clean`, `aged`).
    pub image: String,
    /// Repeat number.
    pub repeat: u32,
    /// Read requests issued.
    pub requests: u64,
    /// Bytes requested.
    pub read_bytes: u64,
    /// Unique bytes requested.
    pub unique_bytes: u64,
    /// The model's analysis of the reads.
    pub analysis: model::Analysis,
    /// Wall time, s.
    pub wall_s: f64,
    /// User CPU, s.
    pub user_s: f64,
    /// System CPU, s.
    pub sys_s: f64,
    /// Peak RSS, KiB.
    pub maxrss_kb: u64,
    /// Where the gzipped trace is.
    pub trace_file: PathBuf,
}

const CSV_HEADER: &str = "tool,image,repeat,requests,read_bytes,unique_bytes,modelled_s,transfer_s,seek_s,readthrough_s,seeks,seek_distance_sectors,discontiguities,dls,one_sweep_s,single_file_s,ratio_to_one_sweep,wall_s,user_s,sys_s,maxrss_kb,trace";

impl Row {
    fn csv(&self) -> String {
        let m = &self.analysis.modelled;
        format!(
            "{},{},{},{},{},{},{:.6},{:.6},{:.6},{:.6},{},{},{},{:.6},{:.6},{:.6},{:.4},{:.3},{:.3},{:.3},{},{}",
            self.tool,
            self.image,
            self.repeat,
            self.requests,
            self.read_bytes,
            self.unique_bytes,
            m.total_s,
            m.transfer_s,
            m.seek_s,
            m.readthrough_s,
            m.seeks,
            m.seek_distance,
            m.discontiguities,
            m.dls(),
            self.analysis.one_sweep.total_s,
            self.analysis.single_file_s,
            ratio(m.total_s, self.analysis.one_sweep.total_s),
            self.wall_s,
            self.user_s,
            self.sys_s,
            self.maxrss_kb,
            self.trace_file.display()
        )
    }
}

/// A named series of (time s, offset MiB) points.
type Series = (String, Vec<(f64, f64)>);

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { f64::NAN }
}

/// The tree to benchmark, staged on the host file system.
struct Staged {
    root: PathBuf,
    dirs: Vec<PathBuf>,
    files: Vec<TreeItem>,
    links: Vec<(PathBuf, PathBuf)>,
    desc: String,
}

/// `<path>.stamp` (appended, so `linux-source-6.12` keeps its `.12`).
fn stamp_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".stamp");
    PathBuf::from(s)
}

fn stamp_ok(stamp: &Path, key: &str) -> bool {
    fs::read_to_string(stamp).map(|s| s == key).unwrap_or(false)
}

fn stage_tree(cfg: &BenchConfig, log: &mut Vec<String>) -> Result<Staged> {
    let trees = cfg.cache.join("trees");
    fs::create_dir_all(&trees).with_context(|| format!("{}: creating", trees.display()))?;
    let (root, desc) = match cfg.profile {
        Profile::Quick => {
            let (n, bytes) = (20_000usize, 300u64 << 20);
            let dir = trees.join(format!("synth-{}-{n}", cfg.seed));
            let key = format!("synthetic v1 seed={} files={n} bytes={bytes}", cfg.seed);
            let stamp = stamp_path(&dir);
            if !stamp_ok(&stamp, &key) {
                let _ = fs::remove_dir_all(&dir);
                fs::create_dir_all(&dir).with_context(|| format!("{}: creating", dir.display()))?;
                let plan = tree::synthetic(cfg.seed, n, bytes);
                tree::write_tree(&plan, &dir)?;
                fs::write(&stamp, &key).with_context(|| format!("{}: writing", stamp.display()))?;
            }
            log.push(format!("# tree: qlab synthetic tree ({key}) staged at {}", dir.display()));
            (dir, key)
        }
        Profile::Full => {
            let tarball = Path::new("/usr/src/linux-source-6.12.tar.xz");
            if !tarball.is_file() {
                bail!("{}: missing; install it with `apt-get install linux-source-6.12`", tarball.display());
            }
            let dir = trees.join("linux-source-6.12");
            let key = "linux-source-6.12 unpacked v1".to_string();
            let stamp = stamp_path(&dir);
            if !stamp_ok(&stamp, &key) {
                let _ = fs::remove_dir_all(&dir);
                sys::run(Command::new("tar").arg("-xf").arg(tarball).arg("-C").arg(&trees))?;
                fs::write(&stamp, &key).with_context(|| format!("{}: writing", stamp.display()))?;
            }
            log.push(format!("# tree: tar -xf {} -C {}", tarball.display(), trees.display()));
            (dir, key)
        }
    };
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    let mut links = Vec::new();
    for ent in walkdir::WalkDir::new(&root).min_depth(1).sort_by_file_name() {
        let ent = ent.with_context(|| format!("{}: walking", root.display()))?;
        let rel = ent.path().strip_prefix(&root).expect("under root").to_path_buf();
        let ft = ent.file_type();
        if ft.is_dir() {
            dirs.push(rel);
        } else if ft.is_symlink() {
            let t = fs::read_link(ent.path()).with_context(|| format!("{}: readlink", ent.path().display()))?;
            links.push((rel, t));
        } else if ft.is_file() {
            let size = ent.metadata().with_context(|| format!("{}: stat", ent.path().display()))?.len();
            files.push(TreeItem { rel, size, src: Some(ent.path().to_path_buf()) });
        }
    }
    let bytes: u64 = files.iter().map(|f| f.size).sum();
    let desc = format!("{desc}; {} files, {} dirs, {} symlinks, {bytes} bytes", files.len(), dirs.len(), links.len());
    Ok(Staged { root, dirs, files, links, desc })
}

fn build_clean(cfg: &BenchConfig, st: &Staged, img: &Path, log: &mut Vec<String>) -> Result<()> {
    let key = format!("clean v1 {} size={} tree={}", cfg.profile.name(), cfg.profile.image_bytes(), st.desc);
    let stamp = stamp_path(img);
    log.push(format!(
        "# clean image: mkfs.ext4 -F -q -m 0 -b 4096 {img} ({} bytes); mount; cp -a {} MNT/tree; umount",
        cfg.profile.image_bytes(),
        st.root.display(),
        img = img.display()
    ));
    if stamp_ok(&stamp, &key) {
        return Ok(());
    }
    let _ = fs::remove_file(&stamp);
    sys::mkfs_ext4(img, cfg.profile.image_bytes(), &["-b", "4096"])?;
    let lp = Loop::attach(img, false)?;
    let mnt = cfg.cache.join(format!("mnt-build-{}", std::process::id()));
    let m = Mount::new(&lp.dev, &mnt, Some("ext4"), "")?;
    sys::run(Command::new("cp").arg("-a").arg(&st.root).arg(mnt.join("tree")))?;
    m.unmount()?;
    drop(lp);
    let _ = fs::remove_dir(&mnt);
    fs::write(&stamp, &key).with_context(|| format!("{}: writing", stamp.display()))?;
    Ok(())
}

fn build_aged(cfg: &BenchConfig, st: &Staged, img: &Path, log: &mut Vec<String>) -> Result<String> {
    let key = format!(
        "aged v1 {} size={} seed={} churn={} tree={}",
        cfg.profile.name(),
        cfg.profile.image_bytes(),
        cfg.seed,
        cfg.profile.churn_factor(),
        st.desc
    );
    let stamp = stamp_path(img);
    let info = img.with_extension("info");
    log.push(format!(
        "# aged image: mkfs.ext4 -F -q -m 0 -b 4096 {} ({} bytes); mount; qlab aging (seed {}, fill to 85%, delete to 70%, 20% appends, {}x capacity churn, then the tree laid down during churn); umount",
        img.display(),
        cfg.profile.image_bytes(),
        cfg.seed,
        cfg.profile.churn_factor()
    ));
    if stamp_ok(&stamp, &key) {
        return fs::read_to_string(&info).with_context(|| format!("{}: reading", info.display()));
    }
    let _ = fs::remove_file(&stamp);
    sys::mkfs_ext4(img, cfg.profile.image_bytes(), &["-b", "4096"])?;
    let lp = Loop::attach(img, false)?;
    let mnt = cfg.cache.join(format!("mnt-build-{}", std::process::id()));
    let m = Mount::new(&lp.dev, &mnt, Some("ext4"), "")?;
    let cap = sys::fs_capacity(&mnt)?;
    let mut p = AgeParams::new(cfg.seed, cap);
    p.churn_factor = cfg.profile.churn_factor();
    let sizes: Vec<u64> = st.files.iter().map(|f| f.size).collect();
    let (ops, stats) = age::plan(&p, &sizes)?;
    let t0 = Instant::now();
    age::execute(&p, &ops, &mnt, Path::new("tree"), &st.dirs, &st.files)?;
    for (rel, target) in &st.links {
        let l = mnt.join("tree").join(rel);
        std::os::unix::fs::symlink(target, &l).with_context(|| format!("{}: symlink", l.display()))?;
    }
    let used = sys::fs_used(&mnt)?;
    m.unmount()?;
    drop(lp);
    let _ = fs::remove_dir(&mnt);
    let text = format!(
        "aging: capacity {cap} bytes, {} creates, {} appends, {} deletes, {} churn bytes ({:.2}x capacity), {} fill/delete cycles, final use {:.1}%, took {:.1} s",
        stats.creates,
        stats.appends,
        stats.deletes,
        stats.churn_bytes,
        stats.churn_bytes as f64 / cap as f64,
        stats.cycles,
        100.0 * used as f64 / cap as f64,
        t0.elapsed().as_secs_f64()
    );
    fs::write(&info, &text).with_context(|| format!("{}: writing", info.display()))?;
    fs::write(&stamp, &key).with_context(|| format!("{}: writing", stamp.display()))?;
    Ok(text)
}

fn cmd_out(line: &str) -> String {
    match Command::new("sh").arg("-c").arg(line).output() {
        Ok(o) => {
            let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.push_str(&String::from_utf8_lossy(&o.stderr));
            s.trim().to_string()
        }
        Err(e) => format!("({line}: {e})"),
    }
}

fn gzip_to(path: &Path, text: &str) -> Result<()> {
    let f = fs::File::create(path).with_context(|| format!("{}: creating", path.display()))?;
    let mut child = Command::new("gzip").arg("-c").stdin(Stdio::piped()).stdout(f).spawn().context("running gzip")?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(text.as_bytes())
        .with_context(|| format!("{}: compressing", path.display()))?;
    let st = child.wait().context("waiting for gzip")?;
    if !st.success() {
        bail!("{}: gzip failed ({st})", path.display());
    }
    Ok(())
}

/// Parses `/usr/bin/time -f "%e %U %S %M"` output: wall, user, sys (s) and
/// peak RSS (KiB).
pub fn parse_time(text: &str) -> Result<(f64, f64, f64, u64)> {
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .with_context(|| format!("empty /usr/bin/time output {text:?}"))?;
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() != 4 {
        bail!("unexpected /usr/bin/time output {line:?}");
    }
    let p = |s: &str| s.parse::<f64>().with_context(|| format!("bad number {s:?} in {line:?}"));
    Ok((p(f[0])?, p(f[1])?, p(f[2])?, f[3].parse().with_context(|| format!("bad RSS in {line:?}"))?))
}

struct Image {
    name: String,
    path: PathBuf,
    layout: LayoutStats,
    freefrag: String,
    info: String,
}

/// Runs the whole benchmark and returns the run directory.
pub fn run(cfg: &BenchConfig) -> Result<PathBuf> {
    if !sys::is_root() {
        bail!("the benchmark needs root (loop devices, mounts, drop_caches, tracefs)");
    }
    fs::create_dir_all(&cfg.cache).with_context(|| format!("{}: creating", cfg.cache.display()))?;
    fs::create_dir_all(&cfg.runs).with_context(|| format!("{}: creating", cfg.runs.display()))?;
    // Absolute paths: the tools run with the mount point as their cwd.
    let mut cfg = cfg.clone();
    cfg.cache = fs::canonicalize(&cfg.cache).with_context(|| format!("{}: resolving", cfg.cache.display()))?;
    cfg.runs = fs::canonicalize(&cfg.runs).with_context(|| format!("{}: resolving", cfg.runs.display()))?;
    let cfg = &cfg;
    let damon = crate::damon::Paused::pause();
    let date = cmd_out("date -u +%F");
    let host = cmd_out("hostname -s");
    let name = format!("{date}-{host}-{}", cfg.profile.name());
    let out = cfg.runs.join(&name);
    fs::create_dir_all(&out).with_context(|| format!("{}: creating", out.display()))?;
    let traces = cfg.cache.join("traces").join(&name);
    fs::create_dir_all(&traces).with_context(|| format!("{}: creating", traces.display()))?;

    let mut commands = vec![format!(
        "# qlab bench --profile {} --repeats {} --seed {}{}",
        cfg.profile.name(),
        cfg.repeats,
        cfg.seed,
        if cfg.aged { "" } else { " --no-aged" }
    )];
    eprintln!("qlab: staging the tree");
    let st = stage_tree(cfg, &mut commands)?;
    let images_dir = cfg.cache.join("images");
    fs::create_dir_all(&images_dir).with_context(|| format!("{}: creating", images_dir.display()))?;
    let mut images = Vec::new();
    eprintln!("qlab: building the clean image");
    let clean = images_dir.join(format!("{}-clean.img", cfg.profile.name()));
    build_clean(cfg, &st, &clean, &mut commands)?;
    images.push(("clean".to_string(), clean, "mkfs + cp -a".to_string()));
    if cfg.aged {
        eprintln!("qlab: building the aged image (this is the slow part)");
        let aged = images_dir.join(format!("{}-aged.img", cfg.profile.name()));
        let info = build_aged(cfg, &st, &aged, &mut commands)?;
        images.push(("aged".to_string(), aged, info));
    }

    let (tools, notes) = tools(cfg.qtar.as_deref());
    let tools: Vec<Tool> = tools
        .into_iter()
        .filter(|t| cfg.only.is_empty() || cfg.only.iter().any(|o| t.name.contains(o.as_str())))
        .collect();
    commands.push("# each tool, per image and repeat: sync; echo 3 > /proc/sys/vm/drop_caches; then, in the image's mount point (mounted -o ro,noload), traced on its loop device:".into());
    for t in &tools {
        commands.push(format!("/usr/bin/time -f '%e %U %S %M' bash -o pipefail -c '{}'    # {}", t.cmd, t.name));
    }
    commands
        .push("# $DST is a private tmpfs, emptied before each copy; its writes are not on the traced device".into());
    fs::write(out.join("commands.txt"), commands.join("\n") + "\n")
        .with_context(|| format!("{}: writing", out.join("commands.txt").display()))?;

    let dst = cfg.cache.join(format!("dst-{}", std::process::id()));
    let dst_mount = Mount::new(Path::new("tmpfs"), &dst, Some("tmpfs"), "size=60%")?;
    let params = DiskParams::default();
    let mut rows: Vec<Row> = Vec::new();
    let mut measured: Vec<Image> = Vec::new();
    let mut footprints: BTreeMap<String, Vec<Series>> = BTreeMap::new();
    let opts = CaptureOptions { buffer_size_kb: 65536, complete: false };
    for (iname, path, info) in &images {
        let lp = Loop::attach(path, true)?;
        let mnt = cfg.cache.join(format!("mnt-{iname}-{}", std::process::id()));
        let m = Mount::new(&lp.dev, &mnt, Some("ext4"), "ro,noload")?;
        eprintln!("qlab: {iname}: measuring layout");
        let files: Vec<PathBuf> = walkdir::WalkDir::new(mnt.join("tree"))
            .sort_by_file_name()
            .into_iter()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_file())
            .map(|e| e.into_path())
            .collect();
        let maps = layout::filefrag(&files)?;
        let lay = layout::layout_stats(&maps);
        let freefrag = layout::e2freefrag(&lp.dev)?;
        fs::write(out.join(format!("freefrag-{iname}.txt")), &freefrag)
            .with_context(|| format!("{}: writing freefrag", out.display()))?;
        let dev = tracefs::device_numbers(&lp.dev)?;
        for rep in 0..cfg.repeats {
            for t in &tools {
                if t.writes_dst {
                    sys::sh(&format!("rm -rf '{}'/* '{}'/.[!.]*", dst.display(), dst.display()))?;
                }
                sys::drop_caches()?;
                let tf = traces.join(format!("{iname}-{}-r{rep}.time", t.name));
                let mut c = Command::new("/usr/bin/time");
                c.args(["-f", "%e %U %S %M", "-o"])
                    .arg(&tf)
                    // pipefail: a failing archiver must fail the run, not hide
                    // behind `| cat`.
                    .args(["bash", "-o", "pipefail", "-c", &t.cmd])
                    .current_dir(&mnt)
                    .env("DST", &dst)
                    .stdin(Stdio::null());
                eprintln!("qlab: {iname}: {} (repeat {rep})", t.name);
                let (res, text, reqs) = tracefs::capture(dev, &opts, || sys::run(&mut c))?;
                res.with_context(|| format!("{} on {iname}", t.name))?;
                let (wall, user, sysc, rss) =
                    parse_time(&fs::read_to_string(&tf).with_context(|| format!("{}: reading", tf.display()))?)?;
                let tr = traces.join(format!("{iname}-{}-r{rep}.trace.gz", t.name));
                gzip_to(&tr, &text)?;
                let ext = model::read_extents(&reqs);
                let a = model::analyze(&params, &ext);
                if rep == 0 {
                    let issues = crate::trace::issues(&reqs);
                    let t0 = issues.first().map(|r| r.time_ns).unwrap_or(0);
                    let pts = issues
                        .iter()
                        .filter(|r| r.is_read())
                        .map(|r| ((r.time_ns - t0) as f64 / 1e9, (r.sector * 512) as f64 / 1048576.0))
                        .collect();
                    footprints.entry(iname.clone()).or_default().push((t.name.clone(), pts));
                }
                rows.push(Row {
                    tool: t.name.clone(),
                    image: iname.clone(),
                    repeat: rep,
                    requests: a.modelled.requests,
                    read_bytes: a.modelled.sectors * 512,
                    unique_bytes: a.unique_bytes,
                    analysis: a,
                    wall_s: wall,
                    user_s: user,
                    sys_s: sysc,
                    maxrss_kb: rss,
                    trace_file: tr,
                });
            }
        }
        m.unmount()?;
        drop(lp);
        let _ = fs::remove_dir(&mnt);
        measured.push(Image { name: iname.clone(), path: path.clone(), layout: lay, freefrag, info: info.clone() });
    }
    dst_mount.unmount()?;
    let _ = fs::remove_dir(&dst);

    let mut csv = String::from(CSV_HEADER);
    csv.push('\n');
    for r in &rows {
        csv.push_str(&r.csv());
        csv.push('\n');
    }
    fs::write(out.join("raw.csv"), csv).with_context(|| format!("{}: writing raw.csv", out.display()))?;

    let mut versions = String::new();
    for line in [
        "uname -a",
        "tar --version | head -1",
        "bsdtar --version",
        "cp --version | head -1",
        "rsync --version | head -1",
        "mkfs.ext4 -V 2>&1 | head -1",
        "filefrag -V 2>&1",
        "/usr/bin/time --version 2>&1",
    ] {
        let _ = writeln!(versions, "$ {line}\n{}\n", cmd_out(line));
    }
    if let Some(q) = &cfg.qtar {
        let _ =
            writeln!(versions, "$ {} --version\n{}\n", q.display(), cmd_out(&format!("'{}' --version", q.display())));
    }
    let _ = writeln!(versions, "{}", damon.describe());
    let _ = writeln!(versions, "tree: {}", st.desc);
    for im in &measured {
        let _ = writeln!(
            versions,
            "image {}: {} ({} bytes, ext4, 4 KiB blocks, mkfs -m 0): {}",
            im.name,
            im.path.display(),
            cfg.profile.image_bytes(),
            im.info
        );
    }
    let _ = writeln!(versions, "disk model: {params:?}");
    fs::write(out.join("versions.txt"), versions)
        .with_context(|| format!("{}: writing versions.txt", out.display()))?;

    for (iname, series) in &footprints {
        crate::plot::footprint(
            &out.join(format!("footprint-{iname}.svg")),
            &format!("Seek footprint, {iname} image: read requests on the loop device"),
            series,
        )?;
    }
    let summary = summarize(cfg, &st.desc, &measured, &rows, &notes, &params);
    for im in &measured {
        let mut bars = Vec::new();
        for t in tools.iter() {
            let rs: Vec<&Row> = rows.iter().filter(|r| r.image == im.name && r.tool == t.name).collect();
            if rs.is_empty() {
                continue;
            }
            bars.push((
                t.name.clone(),
                vec![
                    median(rs.iter().map(|r| r.analysis.modelled.total_s)),
                    median(rs.iter().map(|r| r.analysis.one_sweep.total_s)),
                    median(rs.iter().map(|r| r.analysis.single_file_s)),
                    median(rs.iter().map(|r| r.wall_s)),
                ],
            ));
        }
        crate::plot::bars(
            &out.join(format!("bars-{}.svg", im.name)),
            &format!("{} image: modelled disk time against the bounds", im.name),
            &["modelled (7200 rpm)", "one-sweep bound", "single-file bound", "measured wall (loop on host disk)"],
            &bars,
        )?;
    }
    fs::write(out.join("summary.md"), summary).with_context(|| format!("{}: writing summary.md", out.display()))?;
    Ok(out)
}

fn median(it: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = it.collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn summarize(
    cfg: &BenchConfig,
    tree: &str,
    images: &[Image],
    rows: &[Row],
    notes: &[String],
    p: &DiskParams,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# qlab run: profile {}, {} repeat(s)\n", cfg.profile.name(), cfg.repeats);
    let _ = writeln!(s, "Tree: {tree}.\n");
    let _ = writeln!(
        s,
        "Disk model: 7200 rpm (t2t {} ms, avg {} ms, full {} ms, T_rev {:.2} ms), media rate {:.0}→{:.0} MB/s outer→inner; the image is priced as a partition at offset {} B of a {} B disk. Reads only (images are mounted ro,noload). Times are medians over repeats. `wall` is measured on a loop device backed by a file on this VM's virtual disk, so it is NOT a spinning-disk time: compare tools by the modelled columns, and by wall only side by side within this run.\n",
        p.t_t2t_ms,
        p.t_avg_ms,
        p.t_full_ms,
        p.t_rev_s() * 1e3,
        p.outer_rate / 1e6,
        p.inner_rate / 1e6,
        p.partition_offset,
        p.disk_bytes
    );
    for n in notes {
        let _ = writeln!(s, "- {n}");
    }
    let _ = writeln!(
        s,
        "\n## Images\n\n| image | files with data | extents/file | layout score | next-file contiguity | free extents (e2freefrag) | how made |\n|---|---|---|---|---|---|---|"
    );
    for im in images {
        let free = im
            .freefrag
            .lines()
            .filter(|l| {
                l.starts_with("Num. free extent")
                    || l.starts_with("Avg. free extent")
                    || l.starts_with("Max. free extent")
            })
            .map(|l| l.trim().to_string())
            .collect::<Vec<_>>()
            .join("; ");
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {:.4} | {:.3} | {} | {} |",
            im.name,
            im.layout.files_with_data,
            im.layout.extents_per_file,
            im.layout.layout_score,
            im.layout.interfile_contiguity,
            free,
            im.info
        );
    }
    let mut tools: Vec<String> = Vec::new();
    for r in rows {
        if !tools.contains(&r.tool) {
            tools.push(r.tool.clone());
        }
    }
    let _ = writeln!(
        s,
        "\n## Results\n\n| tool | image | modelled disk s | one-sweep s | ratio to one-sweep | single-file s | seeks | seek distance (GiB) | DLS | requests | wall s | CPU s | peak RSS MiB | wall / GNU tar | modelled / GNU tar |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for im in images {
        let pick = |tool: &str| -> Vec<&Row> { rows.iter().filter(|r| r.image == im.name && r.tool == tool).collect() };
        let base = pick("gnu-tar");
        let base_wall = median(base.iter().map(|r| r.wall_s));
        let base_mod = median(base.iter().map(|r| r.analysis.modelled.total_s));
        for t in &tools {
            let rs = pick(t);
            if rs.is_empty() {
                continue;
            }
            let md = |f: &dyn Fn(&Row) -> f64| median(rs.iter().map(|r| f(r)));
            let modelled = md(&|r| r.analysis.modelled.total_s);
            let sweep = md(&|r| r.analysis.one_sweep.total_s);
            let wall = md(&|r| r.wall_s);
            let _ = writeln!(
                s,
                "| {t} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} | {:.1} | {:.3} | {:.0} | {:.2} | {:.2} | {:.1} | {:.2} | {:.2} |",
                im.name,
                modelled,
                sweep,
                ratio(modelled, sweep),
                md(&|r| r.analysis.single_file_s),
                md(&|r| r.analysis.modelled.seeks as f64),
                md(&|r| r.analysis.modelled.seek_distance as f64 * 512.0 / (1u64 << 30) as f64),
                md(&|r| r.analysis.modelled.dls()),
                md(&|r| r.requests as f64),
                wall,
                md(&|r| r.user_s + r.sys_s),
                md(&|r| r.maxrss_kb as f64 / 1024.0),
                ratio(wall, base_wall),
                ratio(modelled, base_mod),
            );
        }
    }
    if images.len() > 1 {
        let get = |img: &str, f: &dyn Fn(&Row) -> f64| {
            median(rows.iter().filter(|r| r.image == img && r.tool == "gnu-tar").map(f))
        };
        let _ = writeln!(
            s,
            "\n## Aging, with GNU tar as the reference reader\n\naged/clean modelled disk time: {:.2}; aged/clean wall time: {:.2}.",
            ratio(get("aged", &|r| r.analysis.modelled.total_s), get("clean", &|r| r.analysis.modelled.total_s)),
            ratio(get("aged", &|r| r.wall_s), get("clean", &|r| r.wall_s)),
        );
    }
    let _ = writeln!(
        s,
        "\nFiles: `raw.csv` (one row per tool × image × repeat), `commands.txt`, `versions.txt`, `freefrag-*.txt`, `footprint-*.svg`, `bars-*.svg`. Raw traces (gzipped tracefs text) are kept outside git under the cache's `traces/` directory."
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_keep_version_suffixes() {
        assert_eq!(stamp_path(Path::new("/c/linux-source-6.12")), Path::new("/c/linux-source-6.12.stamp"));
        assert_eq!(stamp_path(Path::new("quick-aged.img")), Path::new("quick-aged.img.stamp"));
    }

    #[test]
    fn parses_gnu_time_output() {
        assert_eq!(parse_time("1.52 0.31 0.90 5120\n").unwrap(), (1.52, 0.31, 0.90, 5120));
        assert!(parse_time("Command exited with non-zero status 2\n").is_err());
        assert_eq!(median([3.0, 1.0, 2.0].into_iter()), 2.0);
        assert_eq!(median([4.0, 1.0].into_iter()), 2.5);
    }

    #[test]
    fn tools_cover_the_peers_and_skip_missing_qtar() {
        let (t, notes) = tools(None);
        let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["gnu-tar", "gnu-tar-inode", "bsdtar", "cp-a", "rsync-a"]);
        assert!(t.iter().all(|t| !t.cmd.contains("/dev/null") || t.cmd.contains("| cat >/dev/null")));
        assert_eq!(notes.len(), 1);
        let (t, _) = tools(Some(Path::new("/bin/sh")));
        assert_eq!(t.len(), 12);
    }
}
