"""A role's search_path on a real PostgreSQL (issue 33, cause 9): which table an unqualified
name reads, and which function an unqualified call runs, is decided by the session's
search_path, and a role can set it (`ALTER ROLE ... SET search_path`) where the guard cannot
see it. So a qualified entry of `sql_tables_subset` and an unqualified name in the SQL (or the
other way round) match only when the expect states `default_schema`; and a connection that
fixes its search_path (`options=-c search_path=...`) overrides the role's, which is how a tool
makes the guard's assumptions true."""

from __future__ import annotations

from agentledger.suites.guard import check


def _tables_ok(sql: str, tables: list[str], **options: str) -> bool:
    expect = {"sql_read_only": True, "sql_tables_subset": {"tables": tables, **options}}
    return check({"sql": sql}, expect).ok


def test_a_role_search_path_decides_what_an_unqualified_name_reads(pg_url: str) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as db:
        name = db.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        db.execute("CREATE SCHEMA private")
        db.execute("CREATE TABLE public.invoices (amount int)")
        db.execute("INSERT INTO public.invoices VALUES (10)")
        db.execute("CREATE TABLE private.invoices (amount int)")
        db.execute("INSERT INTO private.invoices VALUES (999999)")  # salaries, say
        db.execute(
            f'ALTER ROLE CURRENT_USER IN DATABASE "{name}" SET search_path = private, public'
        )
    sql = "SELECT sum(amount) FROM invoices"
    with psycopg.connect(pg_url, autocommit=True) as db:
        # The role's setting: `invoices` is private.invoices, outside public.invoices.
        assert db.execute(sql).fetchone() == (999999,)
    # The guard cannot know it: an unqualified name does not stand for public.invoices...
    assert not _tables_ok(sql, ["public.invoices"])
    assert not _tables_ok("SELECT sum(amount) FROM public.invoices", ["invoices"])
    # ...unless the expect states where unqualified names lead, and the connection makes it so.
    assert _tables_ok(sql, ["public.invoices"], default_schema="public")
    fixed = f"{pg_url}?options=-csearch_path%3Dpg_catalog,public"
    with psycopg.connect(fixed, autocommit=True) as db:
        assert db.execute(sql).fetchone() == (10,)
    # Written alike, the two names are the same table whatever the search_path.
    assert _tables_ok(sql, ["invoices"]) and _tables_ok(
        "SELECT 1 FROM private.invoices", ["private.invoices"]
    )


def test_a_role_search_path_before_pg_catalog_shadows_a_built_in(pg_url: str) -> None:
    import psycopg

    sql = "SELECT lower(name) FROM t"
    with psycopg.connect(pg_url, autocommit=True) as db:
        name = db.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        db.execute("CREATE TABLE public.t (name text)")
        db.execute("CREATE TABLE public.log (n int)")
        db.execute("INSERT INTO public.t VALUES ('A')")
        db.execute("CREATE SCHEMA evil")
        db.execute(
            "CREATE FUNCTION evil.lower(text) RETURNS text LANGUAGE sql AS "
            "'INSERT INTO public.log VALUES (1) RETURNING ''x'''"
        )
        db.execute(
            f'ALTER ROLE CURRENT_USER IN DATABASE "{name}" '
            "SET search_path = evil, pg_catalog, public"
        )
    with psycopg.connect(pg_url, autocommit=True) as db:
        assert db.execute(sql).fetchone() == ("x",)  # the role's path: evil.lower wrote
        assert db.execute("SELECT count(*) FROM public.log").fetchone() == (1,)
    # What the guard answers holds for a connection that fixes its search_path: the built-in.
    assert check({"sql": sql}, {"sql_read_only": True}).ok
    fixed = f"{pg_url}?options=-csearch_path%3Dpg_catalog,public"
    with psycopg.connect(fixed, autocommit=True) as db:
        assert db.execute(sql).fetchone() == ("a",)
        assert db.execute("SELECT count(*) FROM public.log").fetchone() == (1,)
