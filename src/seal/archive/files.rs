//! How `stockledger archive` touches its directory. It often runs as root
//! or as the database's owner, and after `--detach` its files are the only
//! copy of history, so nobody else may plant or swap a file in it:
//!
//! - the directory must belong to the user running the archive, and no
//!   group or other user may write it (a new one is made `0700`);
//! - every file is created `0600`, new (`O_EXCL`), and opened without
//!   following a link (`O_NOFOLLOW`): a link planted where a file will be
//!   written makes the run fail instead of writing through it;
//! - a complete rows file that no manifest names is never deleted: it may
//!   be the only copy of events that left the database, so it is set aside
//!   under a name of its own and reported (`set_aside`).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::seal::archive::ArchiveError;

/// What a file of the archive is made with: the owner alone reads it.
const FILE_MODE: u32 = 0o600;
/// What a new archive directory is made with.
const DIR_MODE: u32 = 0o700;
/// Bits of a directory's mode that let a group or other users write it.
const WRITABLE_BY_OTHERS: u32 = 0o022;

/// The directory, made when it does not exist, refused unless it is ours
/// and no one else may write it.
pub fn prepare_dir(dir: &Path) -> Result<(), ArchiveError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| ArchiveError::io(dir, e))?;
    let meta = std::fs::metadata(dir).map_err(|e| ArchiveError::io(dir, e))?;
    if !meta.is_dir() {
        return Err(ArchiveError::unreadable(dir, "not a directory"));
    }
    let me = effective_uid().map_err(|e| ArchiveError::io(Path::new("/proc/self"), e))?;
    if meta.uid() != me {
        return Err(ArchiveError::unreadable(
            dir,
            format!(
                "it belongs to user {}, not to the user archiving ({me}): another user could replace its files (chown it, or archive as its owner)",
                meta.uid()
            ),
        ));
    }
    if meta.mode() & WRITABLE_BY_OTHERS != 0 {
        return Err(ArchiveError::unreadable(
            dir,
            format!(
                "its mode is {:o}: a group or other users may write it and replace its files (chmod go-w it)",
                meta.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// The effective user of this process: /proc/self belongs to it, which
/// spares an unsafe libc call.
fn effective_uid() -> std::io::Result<u32> {
    std::fs::metadata("/proc/self").map(|m| m.uid())
}

/// A new file at `path`, `0600`, refused when anything (a file or a link)
/// is there already.
pub fn create_new(path: &Path) -> Result<File, ArchiveError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| ArchiveError::io(path, e))
}

/// The lock file at `path`, made `0600` when new, never through a link,
/// never truncated.
pub fn open_lock(path: &Path) -> Result<File, ArchiveError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| ArchiveError::io(path, e))
}

/// Moves `name` in `dir` aside to a name no run of the writer reads,
/// touches or overwrites (`NAME.set-aside-UTCSTAMP`, with a counter when
/// that exists too), and returns the new path.
pub fn set_aside(dir: &Path, name: &str) -> Result<PathBuf, ArchiveError> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    for n in 0..SET_ASIDE_TRIES {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!("-{n}")
        };
        let to = dir.join(format!("{name}{SET_ASIDE_MARK}{stamp}{suffix}"));
        // A hard link refuses an existing name, where a rename would replace
        // it; the old name goes only once the new one holds the file.
        match std::fs::hard_link(dir.join(name), &to) {
            Ok(()) => {
                let from = dir.join(name);
                std::fs::remove_file(&from).map_err(|e| ArchiveError::io(&from, e))?;
                return Ok(to);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(ArchiveError::io(&to, e)),
        }
    }
    Err(ArchiveError::unreadable(
        &dir.join(name),
        format!("{SET_ASIDE_TRIES} files set aside under its name already"),
    ))
}

/// What a set-aside file's name carries after the name it had.
pub const SET_ASIDE_MARK: &str = ".set-aside-";
/// How many files of one name and second may be set aside.
const SET_ASIDE_TRIES: u32 = 100;
