//! `-I`: hold the connections open and watch them. A server that refuses a connection (`maxclients`)
//! answers with an error and closes it; one with a `timeout` closes idle connections. Either ends the
//! run with the server's reason, as redis-benchmark does, instead of waiting forever.

use crate::engine::ShardPlan;
use crate::net::{ConnError, Stream};
use crate::protocol::resp::{self, Value};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How often the holder looks at the stop flag and at the other executors.
const POLL: Duration = Duration::from_millis(20);

/// Why one idle connection ended: the server's error reply, its close, or a read failure.
async fn watch(mut stream: Stream, addr: String) -> ConnError {
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    loop {
        match stream.read(&mut buf).await {
            Ok(0) => {
                return ConnError::Lost {
                    addr,
                    reason: "closed by the server".into(),
                };
            }
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                // Anything but an error (a push message) is dropped; an error ends the connection.
                while let Ok(Some((v, used))) = resp::decode(&got) {
                    got.drain(..used);
                    if let Value::Error(msg) = v {
                        return ConnError::Refused(msg);
                    }
                }
            }
            Err(e) => {
                return ConnError::Lost {
                    addr,
                    reason: crate::net::io_reason(e),
                };
            }
        }
    }
}

/// Holds `streams` until the run is stopped, or until one of them (on any executor) ends; publishes the
/// number still open as the shard's live count.
pub(crate) async fn hold(plan: &ShardPlan, streams: Vec<Stream>) -> Result<(), ConnError> {
    let open = Rc::new(Cell::new(streams.len() as u64));
    let failure: Rc<RefCell<Option<ConnError>>> = Rc::new(RefCell::new(None));
    plan.live.publish(open.get(), 0);
    let addr = plan.cfg.target.display();
    let _tasks: Vec<_> = streams
        .into_iter()
        .map(|s| {
            let (open, failure, live, addr) = (
                open.clone(),
                failure.clone(),
                plan.live.clone(),
                addr.clone(),
            );
            glommio::spawn_local(async move {
                let why = watch(s, addr).await;
                open.set(open.get() - 1);
                live.publish(open.get(), 0);
                failure.borrow_mut().get_or_insert(why);
            })
        })
        .collect();
    loop {
        if let Some(e) = failure.borrow_mut().take() {
            // The other executors stop holding too: the run has failed.
            plan.gate.abort.store(true, Ordering::Release);
            return Err(e);
        }
        if plan.control.stopped() || plan.gate.abort.load(Ordering::Acquire) {
            return Ok(());
        }
        glommio::timer::sleep(POLL).await;
    }
}
