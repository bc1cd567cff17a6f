//! The error type of this crate.
//!
//! Rule: every error names the member (or file system path) it concerns and
//! the cause; messages read like GNU tar's after the `tar: ` prefix.

use std::io;

/// Errors from writing, reading or extracting archives.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// An I/O error on a member's data or on the archive stream.
    #[error("{member}: {context}: {source}")]
    Io {
        /// The member name (lossy UTF-8) or `"archive"`.
        member: String,
        /// What was being done.
        context: &'static str,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The member name cannot be stored in the chosen format.
    #[error("{member}: file name is too long ({detail}); not dumped")]
    NameTooLong {
        /// The member name.
        member: String,
        /// GNU's detail text, e.g. `max 256` or `cannot be split`.
        detail: String,
    },
    /// The link target cannot be stored in the chosen format.
    #[error("{member}: link name is too long; not dumped")]
    LinkNameTooLong {
        /// The member name.
        member: String,
    },
    /// A numeric field does not fit the chosen format.
    #[error("{member}: value {value} out of {type_name} range {min}..{max}")]
    ValueOutOfRange {
        /// The member name.
        member: String,
        /// The value that does not fit.
        value: i128,
        /// GNU's type name (`uid_t`, `gid_t`, `off_t`, `time_t`, `major_t`, `minor_t`).
        type_name: &'static str,
        /// Smallest representable value.
        min: i128,
        /// Largest representable value.
        max: i128,
    },
    /// The member kind cannot be stored in the chosen format.
    #[error("{member}: {reason}")]
    Unsupported {
        /// The member name.
        member: String,
        /// Why.
        reason: String,
    },
    /// A malformed archive.
    #[error("archive at byte {offset}: {reason}")]
    Corrupt {
        /// Byte offset of the offending header.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The extraction destination cannot be opened.
    #[error("{path}: cannot open destination: {source}")]
    Destination {
        /// The destination directory.
        path: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

impl ArchiveError {
    pub(crate) fn io(member: &[u8], context: &'static str, source: io::Error) -> Self {
        ArchiveError::Io { member: String::from_utf8_lossy(member).into_owned(), context, source }
    }
}

pub(crate) fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
