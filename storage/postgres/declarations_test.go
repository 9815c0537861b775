package postgres

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// declaredStmts returns every statement renderQueries declares, by field
// name, rendered with {s} kept in place.
func declaredStmts(t *testing.T) map[string]stmt {
	t.Helper()
	q := renderQueries("{s}")
	out := map[string]stmt{}
	for name, st := range stmtFields(&q) {
		out[name] = st
	}
	s := &Store{q: q}
	out["outboxLease(limit 3)"] = s.leaseSQL(3)
	return out
}

// stmtFields returns the statements of q by field name (sweep[table] for
// the sweep's), failing t for a field that is no statement.
func stmtFields(q *queries) map[string]stmt {
	out := map[string]stmt{}
	v := reflect.ValueOf(q).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		switch fv := v.Field(i); fv.Type() {
		case reflect.TypeFor[stmt]():
			out[f.Name] = *(*stmt)(fv.Addr().UnsafePointer())
		case reflect.TypeFor[[sweepTables]stmt]():
			sw := (*[sweepTables]stmt)(fv.Addr().UnsafePointer())
			for j, st := range sw {
				out[f.Name+"["+sweepTargets()[j].table.String()+"]"] = st
			}
		default:
			out[f.Name] = stmt{} // no declaration: reported as such
		}
	}
	return out
}

var (
	schemaName = regexp.MustCompile(`\{s\}\.([a-z_]+)(\s*\()?`)
	// Keywords are matched in upper case only: columns such as
	// updated_at are lower case.
	lockClause  = regexp.MustCompile(`\bFOR (UPDATE|SHARE)\b|pg_advisory`)
	writeClause = regexp.MustCompile(`\b(INSERT INTO|DELETE FROM|UPDATE|SAVEPOINT|ROLLBACK)\b`)
	forUpdate   = regexp.MustCompile(`\bFOR UPDATE\b`)
)

// TestDeclarationsMatchSQL: each statement's declared kind and tables
// agree with its SQL text, so a declaration cannot drift from what the
// statement does. The runtime decides from the declarations alone.
func TestDeclarationsMatchSQL(t *testing.T) {
	byName := map[string]table{}
	for tb := table(0); tb < numTables; tb++ {
		byName[tb.String()] = tb
	}
	for name, st := range declaredStmts(t) {
		if st.sql == "" {
			t.Errorf("%s: no SQL", name)
			continue
		}
		if strings.Contains(st.sql, "{limit}") || strings.Contains(st.sql, "{front}") {
			if name != "outboxLease" {
				t.Errorf("%s: placeholders left in the rendered SQL", name)
			}
		}
		// Tables: every {s}.table named is declared, every declared
		// table is named. Any other {s}.name( is a function of the
		// schema.
		var named tableSet
		for _, m := range schemaName.FindAllStringSubmatch(st.sql, -1) {
			tb, ok := byName[m[1]]
			switch {
			case ok:
				named |= tablesOf(tb)
			case m[2] == "":
				t.Errorf("%s: names {s}.%s, which is no table of the schema", name, m[1])
			}
		}
		if named != st.tables {
			t.Errorf("%s: declares tables %v, its SQL names %v", name, st.tables, named)
		}
		// Kind.
		locks := lockClause.MatchString(st.sql)
		writes := writeClause.MatchString(forUpdate.ReplaceAllString(st.sql, ""))
		switch st.kind {
		case kindRead:
			if locks || writes {
				t.Errorf("%s: declared a plain read, but its SQL locks (%v) or writes (%v)", name, locks, writes)
			}
		case kindLock:
			if !locks || writes {
				t.Errorf("%s: declared a lock, but its SQL locks (%v) and writes (%v)", name, locks, writes)
			}
		case kindWrite:
			if !writes {
				t.Errorf("%s: declared a write, but its SQL writes nothing", name)
			}
		default:
			t.Errorf("%s: kind %v is not declared", name, st.kind)
		}
	}
}

// TestDeclarationsAreSchemaFree: statements of two schemas differ only by
// the schema, and the declarations are the same.
func TestDeclarationsAreSchemaFree(t *testing.T) {
	a, b := renderQueries(`"a"`), renderQueries(`"b"`)
	sbs := stmtFields(&b)
	for name, sa := range stmtFields(&a) {
		sb := sbs[name]
		if sa.kind != sb.kind || sa.tables != sb.tables {
			t.Errorf("%s: declarations differ between schemas", name)
		}
		if strings.ReplaceAll(sa.sql, `"a".`, `"b".`) != sb.sql {
			t.Errorf("%s: SQL differs between schemas beyond the schema", name)
		}
	}
}
