"""The memory store on LanceDB: schema, Arrow rows, events, indexes, search, the store."""
