//! `qtar` flags: GNU tar 1.34's syntax, including old-style bundled options
//! (`tar cvf a.tar dir`) and the position of `-C` among operands.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use clap::{ArgAction, CommandFactory, FromArgMatches, Parser, ValueEnum};

/// `--sort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Sort {
    /// Disk order (qtar's default): data read in physical order.
    #[default]
    Disk,
    /// Each directory sorted by inode (GNU `--sort=inode`).
    Inode,
    /// Each directory sorted by name: reproducible archives.
    Name,
    /// Directory listing order (GNU's default).
    None,
}

/// The raw flags.
#[derive(Debug, Parser)]
#[command(
    name = "tar",
    about = "qtar: a GNU tar 1.34 compatible archiver that reads files in disk order",
    disable_version_flag = true,
    disable_help_flag = true
)]
pub struct Args {
    /// Create a new archive.
    #[arg(short = 'c', long = "create")]
    pub create: bool,
    /// List the contents of an archive.
    #[arg(short = 't', long = "list")]
    pub list: bool,
    /// Extract files from an archive.
    #[arg(short = 'x', long = "extract", visible_alias = "get")]
    pub extract: bool,
    /// Use archive file ARCHIVE (`-` for standard input/output).
    #[arg(short = 'f', long = "file", value_name = "ARCHIVE", action = ArgAction::Append)]
    pub file: Vec<OsString>,
    /// Change to DIR before the operands that follow.
    #[arg(short = 'C', long = "directory", value_name = "DIR", action = ArgAction::Append)]
    pub directory: Vec<PathBuf>,
    /// Verbosely list files processed (twice: long listing).
    #[arg(short = 'v', long = "verbose", action = ArgAction::Count)]
    pub verbose: u8,
    /// Get names to archive from FILE.
    #[arg(short = 'T', long = "files-from", value_name = "FILE", action = ArgAction::Append)]
    pub files_from: Vec<PathBuf>,
    /// `-T` reads NUL-terminated names.
    #[arg(long = "null")]
    pub null: bool,
    /// `-T` reads newline-terminated names (the default).
    #[arg(long = "no-null")]
    pub no_null: bool,
    /// Exclude files matching PATTERN.
    #[arg(long = "exclude", value_name = "PATTERN", action = ArgAction::Append)]
    pub exclude: Vec<OsString>,
    /// Exclude patterns listed in FILE.
    #[arg(short = 'X', long = "exclude-from", value_name = "FILE", action = ArgAction::Append)]
    pub exclude_from: Vec<PathBuf>,
    /// Exclude version control system directories.
    #[arg(long = "exclude-vcs")]
    pub exclude_vcs: bool,
    /// Stay in the local file system.
    #[arg(long = "one-file-system")]
    pub one_file_system: bool,
    /// Follow symlinks; archive the files they point to.
    #[arg(short = 'h', long = "dereference")]
    pub dereference: bool,
    /// Follow hard links; archive the files they refer to.
    #[arg(long = "hard-dereference")]
    pub hard_dereference: bool,
    /// Always use numbers for user/group names.
    #[arg(long = "numeric-owner")]
    pub numeric_owner: bool,
    /// Force NAME[:UID] as owner for added files.
    #[arg(long = "owner", value_name = "NAME")]
    pub owner: Option<String>,
    /// Force NAME[:GID] as group for added files.
    #[arg(long = "group", value_name = "NAME")]
    pub group: Option<String>,
    /// Set mtime for added files from DATE-OR-FILE.
    #[arg(long = "mtime", value_name = "DATE-OR-FILE")]
    pub mtime: Option<String>,
    /// Archive format: gnu, oldgnu, pax, posix, ustar, v7.
    #[arg(short = 'H', long = "format", value_name = "FORMAT")]
    pub format: Option<String>,
    /// Store extended attributes.
    #[arg(long = "xattrs")]
    pub xattrs: bool,
    /// Do not store extended attributes.
    #[arg(long = "no-xattrs")]
    pub no_xattrs: bool,
    /// Handle sparse files efficiently.
    #[arg(short = 'S', long = "sparse")]
    pub sparse: bool,
    /// Print total bytes after processing the archive.
    #[arg(long = "totals")]
    pub totals: bool,
    /// Do not exit with nonzero on unreadable files.
    #[arg(long = "ignore-failed-read")]
    pub ignore_failed_read: bool,
    /// Filter the archive through gzip.
    #[arg(short = 'z', long = "gzip", visible_aliases = ["gunzip", "ungzip"])]
    pub gzip: bool,
    /// Filter the archive through bzip2.
    #[arg(short = 'j', long = "bzip2")]
    pub bzip2: bool,
    /// Filter the archive through xz.
    #[arg(short = 'J', long = "xz")]
    pub xz: bool,
    /// Filter the archive through zstd.
    #[arg(long = "zstd")]
    pub zstd: bool,
    /// Display progress messages every Nth record (default 10).
    #[arg(long = "checkpoint", value_name = "N", num_args = 0..=1, require_equals = true, default_missing_value = "10")]
    pub checkpoint: Option<u64>,
    /// Execute ACTION on each checkpoint.
    #[arg(long = "checkpoint-action", value_name = "ACTION", action = ArgAction::Append)]
    pub checkpoint_action: Vec<String>,
    /// Member order: disk (default), inode, name, none.
    #[arg(long = "sort", value_name = "ORDER", value_enum)]
    pub sort: Option<Sort>,
    /// Don't strip leading `/` and `..` from file names.
    #[arg(short = 'P', long = "absolute-names")]
    pub absolute_names: bool,
    /// Block size of Nx512 bytes (default 20).
    #[arg(short = 'b', long = "blocking-factor", value_name = "BLOCKS")]
    pub blocking_factor: Option<usize>,
    /// Extract information about file permissions (default for root).
    #[arg(short = 'p', long = "preserve-permissions", visible_alias = "same-permissions")]
    pub preserve_permissions: bool,
    /// Apply the user's umask when extracting permissions.
    #[arg(long = "no-same-permissions")]
    pub no_same_permissions: bool,
    /// Try extracting files with the same ownership as in the archive.
    #[arg(long = "same-owner")]
    pub same_owner: bool,
    /// Extract files as yourself.
    #[arg(long = "no-same-owner")]
    pub no_same_owner: bool,
    /// Delay setting directory modes and times until the end of extraction.
    #[arg(long = "delay-directory-restore")]
    pub delay_directory_restore: bool,
    /// Don't replace existing files when extracting.
    #[arg(short = 'k', long = "keep-old-files")]
    pub keep_old_files: bool,
    /// Write a V7 archive (GNU's `--old-archive`, `--portability`).
    #[arg(short = 'o', long = "old-archive", visible_alias = "portability")]
    pub old_archive: bool,
    /// Print program version.
    #[arg(long = "version")]
    pub version: bool,
    /// Print help.
    #[arg(long = "help", short = '?', action = ArgAction::Help)]
    pub help: Option<bool>,
    /// Files to archive (create) or members to list/extract.
    #[arg(value_name = "FILE", allow_hyphen_values = false)]
    pub files: Vec<OsString>,
}

/// An operand with the directory it is relative to (the last `-C` before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operand {
    /// `-C` in force, if any.
    pub dir: Option<PathBuf>,
    /// The name as given.
    pub name: Vec<u8>,
}

/// Options that take an argument in GNU tar's old-style bundled syntax.
const OLD_STYLE_WITH_ARG: &[u8] = b"bfCTXHgKLNV";

/// Rewrites GNU old-style options (`tar cvf a.tar dir`) into short options
/// (`tar -c -v -f a.tar dir`). Only the first argument can be old-style.
pub fn expand_old_style(argv: Vec<OsString>) -> Vec<OsString> {
    let mut it = argv.into_iter();
    let Some(prog) = it.next() else { return Vec::new() };
    let rest: Vec<OsString> = it.collect();
    let mut out = vec![prog];
    match rest.first() {
        Some(first) if !first.as_bytes().is_empty() && first.as_bytes()[0] != b'-' => {
            let letters = first.as_bytes().to_vec();
            let mut args = rest.into_iter().skip(1);
            for l in letters {
                out.push(OsString::from_vec(vec![b'-', l]));
                if OLD_STYLE_WITH_ARG.contains(&l) {
                    if let Some(a) = args.next() {
                        out.push(a);
                    }
                }
            }
            out.extend(args);
        }
        _ => out.extend(rest),
    }
    out
}

/// Inserts the options of `TAR_OPTIONS` (split at white space) before the
/// command-line arguments, as GNU tar does.
pub fn with_tar_options(argv: Vec<OsString>, env: Option<OsString>) -> Vec<OsString> {
    let Some(env) = env else { return argv };
    let mut it = expand_old_style(argv).into_iter();
    let mut out: Vec<OsString> = it.next().into_iter().collect();
    out.extend(
        env.as_bytes()
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
            .map(|w| OsString::from_vec(w.to_vec())),
    );
    out.extend(it);
    out
}

/// Parses the command line; `Err` carries clap's message (usage errors exit 2, like GNU tar).
pub fn parse(argv: Vec<OsString>) -> Result<(Args, Vec<Operand>), clap::Error> {
    let argv = expand_old_style(argv);
    // Already expanded by `with_tar_options` when TAR_OPTIONS is set: a second
    // expansion is a no-op because the first argument then starts with `-`.
    let matches = Args::command().try_get_matches_from(argv)?;
    let args = Args::from_arg_matches(&matches)?;
    // Pair each operand with the last -C before it.
    let mut dirs: Vec<(usize, PathBuf)> = match matches.indices_of("directory") {
        Some(ix) => ix.zip(args.directory.iter().cloned()).collect(),
        None => Vec::new(),
    };
    dirs.sort_by_key(|d| d.0);
    // Each -C is relative to the one before it, as with a real chdir.
    let mut prev: Option<PathBuf> = None;
    for d in &mut dirs {
        let eff = match &prev {
            Some(p) if d.1.is_relative() => p.join(&d.1),
            _ => d.1.clone(),
        };
        d.1 = eff.clone();
        prev = Some(eff);
    }
    let dir_at = |i: usize| dirs.iter().rev().find(|d| d.0 < i).map(|d| d.1.clone());
    let mut ops: Vec<(usize, Operand)> = match matches.indices_of("files") {
        Some(ix) => ix
            .zip(args.files.iter())
            .map(|(i, f)| (i, Operand { dir: dir_at(i), name: f.as_bytes().to_vec() }))
            .collect(),
        None => Vec::new(),
    };
    if let Some(ix) = matches.indices_of("files_from") {
        for (i, list) in ix.zip(args.files_from.iter()) {
            let data = if list.as_os_str() == OsStr::new("-") {
                let mut v = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut v).map(|_| v)
            } else {
                std::fs::read(list)
            };
            let data = data.map_err(|e| {
                clap::Error::raw(
                    clap::error::ErrorKind::Io,
                    format!("{}: Cannot open: {}", list.display(), crate::diag::strerror(&e)),
                )
            })?;
            let sep = if args.null { b'\0' } else { b'\n' };
            for name in data.split(|&b| b == sep).filter(|n| !n.is_empty()) {
                ops.push((i, Operand { dir: dir_at(i), name: name.to_vec() }));
            }
        }
    }
    ops.sort_by_key(|o| o.0);
    Ok((args, ops.into_iter().map(|o| o.1).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn old_style_options_expand() {
        assert_eq!(
            expand_old_style(os(&["tar", "cvf", "a.tar", "dir"])),
            os(&["tar", "-c", "-v", "-f", "a.tar", "dir"])
        );
        assert_eq!(
            expand_old_style(os(&["tar", "cfT", "a.tar", "list", "x"])),
            os(&["tar", "-c", "-f", "a.tar", "-T", "list", "x"])
        );
        assert_eq!(expand_old_style(os(&["tar", "-cf", "a.tar"])), os(&["tar", "-cf", "a.tar"]));
    }

    #[test]
    fn minus_c_applies_to_later_operands() {
        let (a, ops) = parse(os(&["tar", "-cf", "x.tar", "a", "-C", "/d1", "b", "c", "-C", "e", "f"])).unwrap();
        assert!(a.create);
        let got: Vec<_> = ops.iter().map(|o| (o.dir.clone(), String::from_utf8(o.name.clone()).unwrap())).collect();
        assert_eq!(
            got,
            vec![
                (None, "a".into()),
                (Some("/d1".into()), "b".into()),
                (Some("/d1".into()), "c".into()),
                (Some("/d1/e".into()), "f".into())
            ]
        );
    }

    #[test]
    fn checkpoint_value_is_optional() {
        let (a, _) = parse(os(&["tar", "-c", "--checkpoint", "x"])).unwrap();
        assert_eq!(a.checkpoint, Some(10));
        let (a, _) = parse(os(&["tar", "-c", "--checkpoint=3", "x"])).unwrap();
        assert_eq!(a.checkpoint, Some(3));
    }
}
