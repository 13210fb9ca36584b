//! The lock of an object store output. A store has no `flock`; a run holds a lease
//! instead: the object `.shardsmith-lock` under the output prefix, created only if absent
//! (a conditional PUT: `If-None-Match: *` on S3 and Azure, generation 0 on GCS), naming
//! its holder and renewed every [`RENEW`] by a conditional update. A second run finds it
//! and refuses, unless the lease is stale: its holder is a process of this host that no
//! longer exists (a killed run, re-run), or it was not renewed for [`STALE`]. A stale
//! lease is taken over by a conditional update, so two runs cannot both take it. A run
//! whose renewal finds the lease taken over has lost it and never writes its manifest.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use serde::{Deserialize, Serialize};
use shardsmith_manifest::TEMP_PREFIX;

use super::remote::{Remote, is_not_found, runtime};
use crate::{Error, Result};

/// How often the holder renews its lease.
const RENEW: Duration = Duration::from_secs(30);
/// A lease not renewed for this long is stale (its holder is gone or cut off).
const STALE: u64 = 120;

/// Who holds a lease.
#[derive(Debug, Serialize, Deserialize)]
struct Holder {
    host: String,
    pid: u32,
    /// Seconds since the epoch, by the holder's clock.
    started: u64,
    renewed: u64,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

impl Holder {
    fn me() -> Self {
        let t = now();
        Self {
            host: host(),
            pid: std::process::id(),
            started: t,
            renewed: t,
        }
    }

    fn payload(&self) -> PutPayload {
        PutPayload::from(Bytes::from(
            serde_json::to_vec(self).expect("a holder serializes"),
        ))
    }

    /// Why this lease may be taken over, or `None` while its holder may be alive.
    fn stale(&self, here: &str) -> Option<String> {
        if !here.is_empty() && self.host == here {
            let alive = self.pid != std::process::id()
                && std::path::Path::new(&format!("/proc/{}", self.pid)).exists();
            if !alive {
                return Some(format!(
                    "process {} of this host that held it has ended",
                    self.pid
                ));
            }
            return None;
        }
        let age = now().saturating_sub(self.renewed);
        (age > STALE).then(|| format!("not renewed for {age} s"))
    }
}

/// A lease held; dropping it stops the renewal and deletes the lease object.
pub(super) struct Lease {
    remote: Arc<Remote>,
    lost: Arc<AtomicBool>,
    renewal: Option<tokio::task::JoinHandle<()>>,
    /// The lease object's name under the output prefix.
    name: String,
}

/// The name under the output prefix of the lease called `tag` (`lock` for the whole
/// output, `lock-task-000003` for one task of a split run).
pub(super) fn lease_name(tag: &str) -> String {
    format!("{TEMP_PREFIX}{tag}")
}

/// Takes the lease of `remote`'s prefix; `lost` is set if another run takes it over
/// later.
pub(super) fn acquire(remote: &Arc<Remote>, lost: Arc<AtomicBool>, tag: &str) -> Result<Lease> {
    let name = lease_name(tag);
    let key = remote.key(&name);
    let store = remote.store.clone();
    let here = host();
    for _ in 0..3 {
        let mode = PutOptions::from(PutMode::Create);
        match remote.run(store.put_opts(&key, Holder::me().payload(), mode)) {
            Ok(put) => return Ok(start(remote, lost, put.into(), name)),
            Err(object_store::Error::AlreadyExists { .. }) => {}
            // A store without conditional writes cannot hold a lease.
            Err(object_store::Error::NotImplemented { .. }) => {
                return Ok(Lease {
                    remote: remote.clone(),
                    lost,
                    renewal: None,
                    name,
                });
            }
            Err(e) => return Err(remote.error("locking", &name, &e)),
        }
        let got = remote.run(async {
            let got = store.get(&key).await?;
            let version = UpdateVersion {
                e_tag: got.meta.e_tag.clone(),
                version: got.meta.version.clone(),
            };
            Ok::<_, object_store::Error>((got.bytes().await?, version))
        });
        let (bytes, version) = match got {
            Ok(got) => got,
            // Released in between: try again.
            Err(e) if is_not_found(&e) => continue,
            Err(e) => return Err(remote.error("reading", &name, &e)),
        };
        let holder: Option<Holder> = serde_json::from_slice(&bytes).ok();
        if let Some(h) = &holder
            && h.stale(&here).is_none()
        {
            return Err(Error::OutputConflict {
                dir: remote.url(""),
                reason: format!(
                    "is being written by another shardsmith run (process {} on host `{}`, started {} s ago, lease renewed {} s ago); if that run is dead, re-run once the lease is {STALE} s old, or delete `{}`",
                    h.pid,
                    h.host,
                    now().saturating_sub(h.started),
                    now().saturating_sub(h.renewed),
                    remote.url(&name),
                ),
            });
        }
        // Stale (or not a lease shardsmith wrote): taken over only if nobody else did.
        let mode = PutOptions::from(PutMode::Update(version));
        match remote.run(store.put_opts(&key, Holder::me().payload(), mode)) {
            Ok(put) => return Ok(start(remote, lost, put.into(), name)),
            Err(object_store::Error::Precondition { .. }) => continue,
            Err(e) => return Err(remote.error("locking", &name, &e)),
        }
    }
    Err(Error::OutputConflict {
        dir: remote.url(""),
        reason: "is being locked by other shardsmith runs at the same moment".into(),
    })
}

/// Renews the lease every [`RENEW`] from `version` on.
fn start(
    remote: &Arc<Remote>,
    lost: Arc<AtomicBool>,
    mut version: UpdateVersion,
    name: String,
) -> Lease {
    let task_remote = remote.clone();
    let task_lost = lost.clone();
    let key = remote.key(&name);
    let renewal = runtime().spawn(async move {
        let remote = task_remote;
        let mut me = Holder::me();
        loop {
            tokio::time::sleep(RENEW).await;
            me.renewed = now();
            let mode = PutOptions::from(PutMode::Update(version.clone()));
            match remote.store.put_opts(&key, me.payload(), mode).await {
                Ok(put) => version = put.into(),
                Err(object_store::Error::Precondition { .. })
                | Err(object_store::Error::NotFound { .. }) => {
                    task_lost.store(true, Ordering::SeqCst);
                    return;
                }
                // The store is unreachable for now: the next renewal tries again.
                Err(_) => {}
            }
        }
    });
    Lease {
        remote: remote.clone(),
        lost,
        renewal: Some(renewal),
        name,
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(renewal) = self.renewal.take() else {
            return;
        };
        renewal.abort();
        // Another run's lease, once taken over, is not ours to delete.
        if !self.lost.load(Ordering::SeqCst) {
            let key = self.remote.key(&self.name);
            let store = self.remote.store.clone();
            let _ = self.remote.run(async move { store.delete(&key).await });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_leases() {
        let here = "node-1";
        let mut h = Holder::me();
        h.host = here.into();
        // This very process: a pid of this host that is reused by us is not alive as a
        // holder.
        assert!(h.stale(here).is_some());
        h.pid = 1;
        assert!(h.stale(here).is_none(), "pid 1 exists: alive");
        h.pid = u32::MAX;
        assert!(h.stale(here).unwrap().contains("has ended"));
        h.host = "node-2".into();
        assert!(h.stale(here).is_none(), "another host, renewed just now");
        h.renewed = now() - STALE - 5;
        assert!(h.stale(here).unwrap().contains("not renewed"));
    }
}
