"""The chaos soak's auditor: pure checks of the platform's promises over snapshots of every
store (`snapshots`), one module per area, and `reading`, which takes those snapshots from the
services' databases and the sandboxes' own records."""
