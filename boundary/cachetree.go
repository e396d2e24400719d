package boundary

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
)

// cachedTree is the tree `git write-tree` would write from the index
// file index (split or not) without writing anything: the root of its
// cache tree (the TREE extension) when that is valid throughout, every
// tree it names stored -- when git finds it so, write-tree writes
// nothing either and says that root. ok is false whenever that is not
// read for sure (another index version, an unmerged entry, a shared
// index that is not there, a tree not found in process): the caller
// runs git write-tree.
func (g *gitRepo) cachedTree(index string) (string, bool) {
	w := g.objects(nil)
	if !w.InProcess() {
		return "", false
	}
	b, err := os.ReadFile(index)
	if err != nil {
		return "", false
	}
	idLen := g.newHash().Size()
	if len(b) < 12+idLen || string(b[:4]) != "DIRC" {
		return "", false
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version != 2 && version != 3 {
		return "", false // version 4 compresses its paths
	}
	n := binary.BigEndian.Uint32(b[8:12])
	end := len(b) - idLen // the trailing checksum
	off := 12
	for range n {
		if off+40+idLen+2 > end {
			return "", false
		}
		flags := binary.BigEndian.Uint16(b[off+40+idLen:])
		if flags&0x3000 != 0 {
			return "", false // an unmerged entry: write-tree refuses
		}
		name := off + 40 + idLen + 2
		if flags&0x4000 != 0 {
			if version < 3 {
				return "", false
			}
			name += 2
		}
		nul := bytes.IndexByte(b[name:end], 0)
		if nul < 0 {
			return "", false
		}
		off += (name - off + nul + 8) &^ 7
	}
	var root string
	var trees []string
	for off+8 <= end {
		sig, size := string(b[off:off+4]), int(binary.BigEndian.Uint32(b[off+4:off+8]))
		data := off + 8
		if size < 0 || data+size > end {
			return "", false
		}
		ext := b[data : data+size]
		switch sig {
		case "link":
			if len(ext) < idLen {
				return "", false
			}
			shared := "sharedindex." + hex.EncodeToString(ext[:idLen])
			if !absentFile(filepath.Join(g.gitDir, shared)) {
				break
			}
			return "", false // git cannot read the index
		case "TREE":
			var ok bool
			if trees, ok = cacheTrees(ext, idLen); !ok || len(trees) == 0 {
				return "", false
			}
			root = trees[0]
		}
		off = data + size
	}
	if off != end || root == "" {
		return "", false
	}
	for _, t := range trees {
		if !w.HasTree(t) {
			return "", false
		}
	}
	return root, true
}

// cacheTrees reads a TREE extension: the tree of every node, the root's
// first; ok is false when a node is invalid (its tree not known) or the
// extension does not read.
func cacheTrees(ext []byte, idLen int) (trees []string, ok bool) {
	for len(ext) > 0 {
		nul := bytes.IndexByte(ext, 0)
		if nul < 0 {
			return nil, false
		}
		ext = ext[nul+1:]
		lf := bytes.IndexByte(ext, '\n')
		if lf < 0 {
			return nil, false
		}
		count, sub, found := bytes.Cut(ext[:lf], []byte(" "))
		ext = ext[lf+1:]
		entries, err1 := strconv.Atoi(string(count))
		_, err2 := strconv.Atoi(string(sub))
		if !found || err1 != nil || err2 != nil || entries < 0 || len(ext) < idLen {
			return nil, false
		}
		trees = append(trees, hex.EncodeToString(ext[:idLen]))
		ext = ext[idLen:]
	}
	return trees, true
}
