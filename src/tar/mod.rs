//! `qtar`: a GNU tar 1.34 drop-in for `-c`, `-t` and `-x` that reads files in
//! disk order.

pub mod args;
mod checkpoint;
mod create;
mod names;

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::process::ExitCode;

use crate::diag::{Diag, Status, strerror};
use args::Args;

/// Runs `qtar` with `argv` (including the program name) and returns the exit code.
pub fn main(argv: Vec<OsString>) -> ExitCode {
    let argv0 = argv.first().cloned().unwrap_or_else(|| "qtar".into());
    let diag = Diag::new(&argv0);
    let argv = args::with_tar_options(argv, std::env::var_os("TAR_OPTIONS"));
    let (args, operands) = match args::parse(argv) {
        Ok(p) => p,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(e.kind(), DisplayHelp | DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            let msg = e.to_string();
            let first = msg.lines().next().unwrap_or("").trim_start_matches("error: ");
            diag.say(first);
            diag.say(format!("Try '{} --help' for more information.", diag.prog()));
            return ExitCode::from(2);
        }
    };
    if args.version {
        print_version(&diag);
        return ExitCode::SUCCESS;
    }
    let modes = [args.create, args.list, args.extract].iter().filter(|&&m| m).count();
    if modes != 1 {
        diag.say(if modes == 0 {
            "You must specify one of the '-Acdtrux', '--delete' or '--test-label' options"
        } else {
            "You may not specify more than one '-Acdtrux', '--delete' or  '--test-label' option"
        });
        diag.say(format!("Try '{} --help' for more information.", diag.prog()));
        return ExitCode::from(2);
    }
    if args.create {
        raise_open_file_limit();
        create::run(&args, &operands, &diag)
    } else {
        read_mode(&args, &operands, &diag)
    }
}

/// The data pass keeps files open ahead of the one being archived; allow it
/// as many as the hard limit permits.
fn raise_open_file_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}

fn print_version(diag: &Diag) {
    // GNU's testsuite (version.at) checks the first line when we run as `tar`.
    let first = if diag.prog() == "tar" {
        "tar (GNU tar) 1.34".to_string()
    } else {
        format!("{} (qtar) {}", diag.prog(), env!("CARGO_PKG_VERSION"))
    };
    let text = format!(
        "{first}\nqtar {}: a GNU tar 1.34 compatible archiver that reads files in disk order.\nLicense MIT OR Apache-2.0.\n",
        env!("CARGO_PKG_VERSION")
    );
    // A reader that stops early (`| sed 1q`) is not an error.
    let _ = io::stdout().lock().write_all(text.as_bytes());
}

/// The archive name: `-f`, else `$TAPE`, else standard input/output.
fn archive_name(args: &Args) -> OsString {
    args.file.last().cloned().or_else(|| std::env::var_os("TAPE")).unwrap_or_else(|| "-".into())
}

fn read_mode(args: &Args, operands: &[args::Operand], diag: &Diag) -> ExitCode {
    let name = archive_name(args);
    let input: Box<dyn Read> = if name == "-" {
        Box::new(io::stdin().lock())
    } else {
        match File::open(&name) {
            Ok(f) => Box::new(io::BufReader::with_capacity(1 << 20, f)),
            Err(e) => {
                return diag.fatal(format!("{}: Cannot open: {}", name.to_string_lossy(), strerror(&e)));
            }
        }
    };
    let input = match qtar_archive::decompress_reader(input) {
        Ok(r) => r,
        Err(e) => return diag.fatal(format!("{}: {}", name.to_string_lossy(), strerror(&e))),
    };
    if !operands.is_empty() {
        diag.say("member selection is not supported by qtar -t/-x; use GNU tar for it");
        return ExitCode::from(2);
    }
    if args.list {
        let stdout = io::stdout();
        let mut out = io::BufWriter::new(stdout.lock());
        match qtar_archive::list(input, args.verbose, args.numeric_owner, &mut out) {
            Ok(warnings) => {
                for w in warnings {
                    diag.warn(Status::Trouble, w);
                }
            }
            Err(e) => diag.error(e),
        }
        let _ = out.flush();
    } else {
        let dest = args.directory.last().cloned().unwrap_or_else(|| ".".into());
        extract(args, input, &dest, diag);
    }
    diag.finish()
}

fn extract(args: &Args, input: Box<dyn Read + '_>, dest: &std::path::Path, diag: &Diag) {
    let pick = |yes: bool, no: bool| {
        if yes {
            Some(true)
        } else if no {
            Some(false)
        } else {
            None
        }
    };
    let opts = qtar_archive::ExtractOptions {
        same_owner: pick(args.same_owner, args.no_same_owner),
        same_permissions: pick(args.preserve_permissions, args.no_same_permissions),
        numeric_owner: args.numeric_owner,
        xattrs: args.xattrs && !args.no_xattrs,
    };
    match qtar_archive::extract(input, dest, opts) {
        Ok(report) => {
            for m in &report.messages {
                diag.say(m);
            }
            diag.raise(match report.exit_status {
                0 => Status::Ok,
                1 => Status::Differs,
                _ => Status::Trouble,
            });
        }
        Err(e) => diag.error(e),
    }
}
