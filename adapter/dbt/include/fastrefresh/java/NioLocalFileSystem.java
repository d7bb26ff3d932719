/*
 * dbt-fastrefresh: Hadoop's local file system for the embedded Spark, without a process
 * per file.
 *
 * Hadoop's RawLocalFileSystem sets the permissions of every file and folder it creates,
 * and without Hadoop's native library (pyspark ships none) it does so by starting a
 * `chmod` process. Through its checksum files Hadoop's LocalFileSystem writes two files
 * per file, so each Iceberg commit (a data file, manifests, a manifest list, a metadata
 * file) started 8-12 processes, about 8 ms a file on 2 cores. This is the same file system
 * (LocalFileSystem over RawLocalFileSystem, with its checksum files), setting the same
 * permissions through java.nio (docs/bookkeeping.md, "Files without processes").
 *
 * Built at first use with Janino, the compiler Spark ships (runtime/jars.py): no JDK
 * needed, and it keeps to the Java that Janino compiles (no generics, no lambdas).
 */
package dbt.fastrefresh;

import java.io.IOException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

public class NioLocalFileSystem extends LocalFileSystem {

  public NioLocalFileSystem() {
    super(new Raw());
  }

  /** RawLocalFileSystem with setPermission through java.nio where it can. */
  public static class Raw extends RawLocalFileSystem {

    private static final boolean POSIX =
        FileSystems.getDefault().supportedFileAttributeViews().contains("posix");

    /** The permission bits, lowest first (01 is others' execute, 0400 the owner's read). */
    private static final PosixFilePermission[] BITS = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_READ,
    };

    public void setPermission(Path p, FsPermission permission) throws IOException {
      int mode = permission.toShort() & 07777;
      if (!POSIX || (mode & ~0777) != 0) {
        // No POSIX attributes (Windows), or a sticky, setuid or setgid bit, which java.nio
        // cannot set: Hadoop's own way.
        super.setPermission(p, permission);
        return;
      }
      EnumSet bits = EnumSet.noneOf(PosixFilePermission.class);
      for (int i = 0; i < BITS.length; i++) {
        if ((mode & (1 << i)) != 0) {
          bits.add(BITS[i]);
        }
      }
      Files.setPosixFilePermissions(pathToFile(p).toPath(), bits);
    }
  }
}
