// SPDX-License-Identifier: Apache-2.0
package spanprof.context;

import java.io.File;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The JNI part (writer/java/native/spanprof_jni.c with the writer library compiled in),
 * libspanprof_java.so. Loaded once: from the path in the system property spanprof.native or the
 * environment variable SPANPROF_JAVA_NATIVE when set, else from the copy bundled in this jar
 * (/spanprof/linux-x86_64/libspanprof_java.so), extracted to a new file readable by this user
 * only under java.io.tmpdir (deleted when the JVM exits: spanprof reads the library's symbols
 * from the file while the process runs). If it cannot be loaded, {@link #ok()} is false, the
 * reason is logged once, and the extension publishes nothing.
 */
final class Native {
  private static final Logger logger = Logger.getLogger("spanprof.context");
  private static final String RESOURCE = "/spanprof/linux-x86_64/libspanprof_java.so";
  private static final boolean OK = load();

  private Native() {}

  static boolean ok() {
    return OK;
  }

  private static boolean load() {
    try {
      if (!"Linux".equals(System.getProperty("os.name"))
          || !"amd64".equals(System.getProperty("os.arch"))) {
        throw new UnsatisfiedLinkError(
            System.getProperty("os.name") + "/" + System.getProperty("os.arch")
                + " is not supported (Linux x86-64 only)");
      }
      String path = System.getProperty("spanprof.native");
      if (path == null) {
        path = System.getenv("SPANPROF_JAVA_NATIVE");
      }
      if (path == null) {
        path = extract().getAbsolutePath();
      }
      System.load(path);
      detach(attachNone()); // proves the natives are bound
      return true;
    } catch (Throwable t) {
      logger.log(Level.WARNING, "spanprof: the native part did not load, publishing nothing: " + t);
      return false;
    }
  }

  private static File extract() throws Exception {
    try (InputStream in = Native.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new UnsatisfiedLinkError(RESOURCE + " is not in the jar");
      }
      // createTempFile: a new name, mode 0600.
      File f = File.createTempFile("spanprof_java", ".so");
      f.deleteOnExit();
      Files.copy(in, f.toPath(), StandardCopyOption.REPLACE_EXISTING);
      return f;
    }
  }

  /**
   * Publishes (trace id, span id) on the calling thread, the ids as longs read big-endian
   * ({@link #hexLong}); the token for {@link #detach}. An all-zero id publishes no span.
   */
  static native long attach(long traceHi, long traceLo, long spanId, int traceFlags);

  /** A level that publishes no span on the calling thread. */
  static native long attachNone();

  /** Restores what the calling thread published before the attach that returned token. */
  static native void detach(long token);

  /** The calling thread's published record, "TRACE-SPAN" in hex, or null. */
  static native String current();

  /** spctx_process_publish: 0 or -errno. keyValues: key, value, key, value, ... */
  static native int publishProcess(String[] keyValues, String[] attrKeys);

  static native int unpublishProcess();

  /**
   * Turns on the publishing of virtual threads' spans (JVMTI: mount/unmount events): 0, or a
   * negative step that failed (-1: no JVMTI 21, the JVM has no virtual threads).
   */
  static native int vtInit();

  /**
   * The calling virtual thread's current span (ids as for {@link #attach}; all zero: none),
   * published on its carrier while it is mounted.
   */
  static native void vtSet(long traceHi, long traceLo, long spanId, int traceFlags);

  /**
   * The 16 hex digits of s from off as a long (big-endian), or 0 if s is too short or one is not
   * a hex digit (SpanContext's ids are lower-case hex; 0 publishes no span).
   */
  static long hexLong(String s, int off) {
    if (s.length() < off + 16) {
      return 0;
    }
    long v = 0;
    for (int i = off; i < off + 16; i++) {
      char c = s.charAt(i);
      int d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        d = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        d = c - 'A' + 10;
      } else {
        return 0;
      }
      v = v << 4 | d;
    }
    return v;
  }
}
