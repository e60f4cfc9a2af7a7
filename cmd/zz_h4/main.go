package main

import (
	"database/sql"
	"fmt"
	"io"
	"os"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {
	db, err := sql.Open("duckdb", os.Args[1])
	if err != nil { panic(err) }
	b, _ := io.ReadAll(os.Stdin)
	for _, st := range strings.Split(string(b), ";\n") {
		st = strings.TrimSpace(st)
		if st == "" { continue }
		if strings.HasPrefix(strings.ToUpper(st), "SELECT") || strings.HasPrefix(strings.ToUpper(st), "FROM") || strings.HasPrefix(strings.ToUpper(st), "SHOW") || strings.HasPrefix(strings.ToUpper(st), "DESCRIBE") {
			rows, err := db.Query(st)
			if err != nil { fmt.Println("ERR", err); os.Exit(1) }
			cols, _ := rows.Columns()
			fmt.Println(strings.Join(cols, "\t"))
			for rows.Next() {
				v := make([]any, len(cols)); p := make([]any, len(cols))
				for i := range v { p[i] = &v[i] }
				rows.Scan(p...)
				s := make([]string, len(cols))
				for i := range v { s[i] = fmt.Sprint(v[i]) }
				fmt.Println(strings.Join(s, "\t"))
			}
			rows.Close()
		} else {
			if _, err := db.Exec(st); err != nil { fmt.Println("ERR", err, "in", st); os.Exit(1) }
		}
	}
}
