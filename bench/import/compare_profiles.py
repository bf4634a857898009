#!/usr/bin/env python3
"""Checks that two profiles hold the same rows: every table of A equals B's, row for row, in rowid
order (the order the importer added them), every column compared. Only origin.created_utc (the
wall clock at import) may differ. For import speed work: the same inputs imported by an older and
a newer binary must give the same profile.

  compare_profiles.py A.ssdb B.ssdb            exit 0 when equal, 1 with the first differences

Standard library only (sqlite3)."""
import sqlite3
import sys

IGNORED_COLUMNS = {("origin", "created_utc")}


def tables(db):
    return sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))


def columns(db, table):
    return [r[1] for r in db.execute("SELECT * FROM pragma_table_info(?)", (table,))]


def rows(db, table, cols):
    """In rowid order; a WITHOUT ROWID table (meta) in its primary key's order."""
    sql = "SELECT %s FROM \"%s\"" % (", ".join('"%s"' % c for c in cols), table)
    try:
        return db.execute(sql + " ORDER BY rowid")
    except sqlite3.OperationalError:
        return db.execute(sql)


def compare(path_a, path_b, out=sys.stdout):
    a = sqlite3.connect("file:%s?mode=ro" % path_a, uri=True)
    b = sqlite3.connect("file:%s?mode=ro" % path_b, uri=True)
    problems = 0
    ta, tb = tables(a), tables(b)
    if ta != tb:
        print("tables differ: %s vs %s" % (ta, tb), file=out)
        return 1
    total = 0
    for t in ta:
        ca, cb = columns(a, t), columns(b, t)
        if ca != cb:
            print("%s: columns differ: %s vs %s" % (t, ca, cb), file=out)
            problems += 1
            continue
        cols = [c for c in ca if (t, c) not in IGNORED_COLUMNS]
        ra, rb = rows(a, t, cols), rows(b, t, cols)
        n = 0
        shown = 0
        while True:
            x, y = ra.fetchmany(10000), rb.fetchmany(10000)
            if not x and not y:
                break
            if x != y:
                for i in range(max(len(x), len(y))):
                    rx = x[i] if i < len(x) else None
                    ry = y[i] if i < len(y) else None
                    if rx != ry and shown < 5:
                        print("%s row %d: %r\n%s        vs %r" % (t, n + i + 1, rx, " " * len(t), ry), file=out)
                        shown += 1
                problems += 1
            n += max(len(x), len(y))
        total += n
        print("%-16s %9d rows %s" % (t, n, "equal" if not shown else "DIFFER"), file=out)
    print("%d tables, %d rows: %s" % (len(ta), total, "equal" if not problems else "DIFFERENT"), file=out)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(compare(sys.argv[1], sys.argv[2]))
