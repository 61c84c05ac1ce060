def reference(table, ids, tokens, vocab, hidden):
    """out[t, :] = table[ids[t], :], in table's dtype."""
    return table[ids]
