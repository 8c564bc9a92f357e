"""What win-bridge and win-overlay share: config model, HNS endpoint documents, policy rules,
API choice, and the ADD/DEL/CHECK/GC/STATUS lifecycle over libhns. Each plugin supplies only a
``Flavor`` describing what differs."""
